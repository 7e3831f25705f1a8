import { Passthrough } from "@modelgate/openai-adapter"
const chunk = (i: number) => `data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"gpt-4o-mini","choices":[{"index":0,"delta":{"content":"word${i} "},"finish_reason":null}]}\n\n`
const N = 200000
const enc = new TextEncoder(); const bytes = Array.from({ length: 200 }, (_, i) => enc.encode(chunk(i)))
const dec = new TextDecoder()
const c0 = process.cpuUsage()
for (let r = 0; r < N / 200; r++) { const m = new Passthrough.PassthroughMeter({ includeUsage: false }); for (const b of bytes) m.push(dec.decode(b, { stream: true })); m.end() }
const c1 = process.cpuUsage(c0)
console.log(`meter: ${((c1.user + c1.system) / N).toFixed(2)} us per chunk`)
