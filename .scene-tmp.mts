import { createHash } from "node:crypto"
import { sandboxScene } from "./src/services/SandboxScene.ts"
const [p, d, w, h, a] = process.argv.slice(2)
const frames = Number(d) * 24
console.log(sandboxScene(new Uint8Array(createHash("sha256").update(p!).digest()), { width: Number(w), height: Number(h), frames, samples: a === "1" ? Number(d) * 48000 : undefined }).filterGraph)
