// Validates one .glb with the Khronos glTF validator and prints its report
// as JSON on stdout: node validate.mjs FILE.glb. Exits 1 when the report
// has errors, 2 when the file cannot be read.
import { readFile } from "node:fs/promises";
import validator from "gltf-validator";

const path = process.argv[2];
if (!path) {
  console.error("usage: node validate.mjs FILE.glb");
  process.exit(2);
}
let data;
try {
  data = new Uint8Array(await readFile(path));
} catch (err) {
  console.error(`read ${path}: ${err.message}`);
  process.exit(2);
}
const report = await validator.validateBytes(data, { uri: path, maxIssues: 100 });
console.log(JSON.stringify(report));
process.exit(report.issues.numErrors > 0 ? 1 : 0);
