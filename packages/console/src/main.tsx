/**
 * The console's entry: providers (theme, notifications, server state,
 * language, session, router under /console/) around the app.
 *
 * @since 0.1.0
 */
import "@mantine/core/styles.css"
import "@mantine/charts/styles.css"
import "@mantine/notifications/styles.css"
import { StrictMode } from "react"
import { createRoot } from "react-dom/client"
import { BrowserRouter } from "react-router"
import { App } from "./App.tsx"
import { Providers } from "./Providers.tsx"

createRoot(document.getElementById("root")!).render(
  <StrictMode>
    <Providers>
      <BrowserRouter basename="/console">
        <App />
      </BrowserRouter>
    </Providers>
  </StrictMode>
)
