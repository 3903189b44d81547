import { defineConfig } from "vite";

// The gateway embeds dist/ and serves it at /; hashed files go under assets/.
export default defineConfig({
  // The 3D viewer (three.js, about 650 kB) is its own chunk, loaded only
  // when a person opens a model; the page itself stays small.
  build: { outDir: "dist", emptyOutDir: true, target: "es2022", sourcemap: false, chunkSizeWarningLimit: 700 },
  test: { environment: "node", include: ["src/**/*.test.ts"] },
} as never);
