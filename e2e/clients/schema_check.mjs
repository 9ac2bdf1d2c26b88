// Checks that every tool schema the server lists to a 2026-07-28 client is a
// valid JSON Schema 2020-12 document, by compiling it with Ajv's 2020-12
// validator in strict mode (an unknown keyword, a malformed keyword value or
// a schema the 2020-12 meta-schema rejects is an error).
//
//   node schema_check.mjs SERVER_BINARY MANIFEST...
//
// For each manifest the server runs on stdio and gets one modern `tools/list`
// (per-request `_meta`, no handshake). Every `inputSchema` and `outputSchema`
// must declare the 2020-12 dialect in `$schema` and compile. Prints one JSON
// line per manifest, like the client drivers (`{"step", "ok", "detail"}`).
// Ajv is pinned in e2e/node/package.json; E2E_NODE_MODULES as for ts_sdk.mjs.

import { spawn } from "node:child_process";
import { createRequire } from "node:module";
import { dirname, join, relative } from "node:path";
import { fileURLToPath } from "node:url";

const here = dirname(fileURLToPath(import.meta.url));
const root = join(here, "..", "..");
const modules = process.env.E2E_NODE_MODULES ?? join(root, ".cache", "node", "node_modules");
const require = createRequire(join(modules, "noop.js"));
const Ajv2020 = require("ajv/dist/2020.js").default;

const DIALECT = "https://json-schema.org/draft/2020-12/schema";
const REQUEST = {
  jsonrpc: "2.0",
  id: 1,
  method: "tools/list",
  params: {
    _meta: {
      "io.modelcontextprotocol/protocolVersion": "2026-07-28",
      "io.modelcontextprotocol/clientInfo": { name: "morloc-mcp-e2e-schemas", version: "1.0.0" },
      "io.modelcontextprotocol/clientCapabilities": {},
    },
  },
};
const TIMEOUT_MS = 20000;

let failed = false;
function step(name, error, detail = "") {
  const ok = error == null;
  failed ||= !ok;
  console.log(JSON.stringify({ step: name, ok, detail: ok ? detail : error }));
}

/** The result of one modern tools/list against `manifest` over stdio. */
function listTools(binary, manifest) {
  return new Promise((resolve, reject) => {
    const server = spawn(binary, ["mcp", manifest], { stdio: ["pipe", "pipe", "pipe"] });
    let out = "";
    let err = "";
    const timer = setTimeout(() => {
      server.kill("SIGKILL");
      reject(new Error(`no answer within ${TIMEOUT_MS} ms; stderr: ${err.slice(-500)}`));
    }, TIMEOUT_MS);
    server.stderr.on("data", (d) => { err += d; });
    server.stdout.on("data", (d) => {
      out += d;
      const line = out.split("\n").find((l) => l.includes('"id":1'));
      if (!line) return;
      clearTimeout(timer);
      server.stdin.end();
      try {
        const msg = JSON.parse(line);
        if (msg.error) reject(new Error(`tools/list answered error ${JSON.stringify(msg.error)}`));
        else resolve(msg.result);
      } catch (e) {
        reject(e);
      }
    });
    server.on("error", (e) => { clearTimeout(timer); reject(e); });
    server.stdin.write(JSON.stringify(REQUEST) + "\n");
  });
}

function checkSchema(ajv, where, schema) {
  if (schema?.$schema !== DIALECT) return `${where}: $schema is ${JSON.stringify(schema?.$schema)}, not ${DIALECT}`;
  try {
    ajv.compile(schema);
  } catch (e) {
    return `${where}: not a valid 2020-12 schema: ${e.message}`;
  }
  return null;
}

async function main() {
  const [binary, ...manifests] = process.argv.slice(2);
  if (!binary || manifests.length === 0) {
    console.error("usage: schema_check.mjs SERVER_BINARY MANIFEST...");
    process.exit(2);
  }
  for (const manifest of manifests) {
    const name = `schemas ${relative(root, manifest)}`;
    try {
      const { tools } = await listTools(binary, manifest);
      // A fresh validator per tool: each schema is compiled on its own.
      const errors = [];
      let count = 0;
      for (const tool of tools) {
        for (const key of ["inputSchema", "outputSchema"]) {
          if (!(key in tool)) continue;
          count += 1;
          const ajv = new Ajv2020({ strict: true, strictTypes: false, allErrors: true });
          const error = checkSchema(ajv, `${tool.name}.${key}`, tool[key]);
          if (error) errors.push(error);
        }
      }
      step(name, errors.length ? errors.join("; ") : (count ? null : "no schemas listed"),
        `${tools.length} tools, ${count} schemas compiled`);
    } catch (e) {
      step(name, `${e?.message ?? e}`);
    }
  }
}

main().then(() => process.exit(failed ? 1 : 0), (e) => { step("driver", `${e}`); process.exit(1); });
