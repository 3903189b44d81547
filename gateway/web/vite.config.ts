import { defineConfig } from "vite";

// The gateway embeds dist/ and serves it at /; hashed files go under assets/.
export default defineConfig({
  build: { outDir: "dist", emptyOutDir: true, target: "es2022", sourcemap: false },
  test: { environment: "node", include: ["src/**/*.test.ts"] },
} as never);
