// Pi 1.6.0's validateToolArguments (pi-ai + pi-schema) on JSON lines {"name","schema","arguments"}
// read from stdin; prints one JSON line per input: {"ok":true,"value":...} or {"ok":false,"message":...}.
import { existsSync, readFileSync } from "node:fs";
import { homedir } from "node:os";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
const nm = [process.env.PI_REF16_MODULES, join(homedir(), ".cache", "pi-ref16", "node_modules")].find(
  (c) => c && existsSync(join(c, "@earendil-works/pi-ai/package.json")),
);
if (!nm) { console.error("Pi 1.6.0 is not installed"); process.exit(3); }
const { validateToolArguments } = await import(pathToFileURL(join(nm, "@earendil-works/pi-ai/dist/utils/validation.js")).href);
const lines = readFileSync(0, "utf8").split("\n").filter((l) => l.trim());
for (const line of lines) {
  const { name, schema, arguments: args } = JSON.parse(line);
  try {
    const value = validateToolArguments({ name, parameters: schema }, { type: "toolCall", id: "c1", name, arguments: args });
    console.log(JSON.stringify({ ok: true, value: value === undefined ? null : value }));
  } catch (e) {
    console.log(JSON.stringify({ ok: false, message: e.message }));
  }
}
