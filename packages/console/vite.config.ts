import react from "@vitejs/plugin-react"
import { defineConfig } from "vite"

// The console is served by node-http under /console/; API calls go to the same
// origin. In dev mode (`vite`), /api and /v1 are proxied to a running gateway.
const target = process.env["MODELGATE_URL"] ?? "http://127.0.0.1:8080"

export default defineConfig({
  base: "/console/",
  plugins: [react()],
  build: {
    outDir: "dist",
    emptyOutDir: true,
    // One bundle: React, Mantine, the charts and Effect (Schema and the HttpApi client the console derives from the API contract).
    chunkSizeWarningLimit: 1600
  },
  server: {
    port: 5173,
    proxy: {
      "/api": { target, changeOrigin: false },
      "/v1": { target, changeOrigin: false },
      "/v1beta": { target, changeOrigin: false }
    }
  }
})
