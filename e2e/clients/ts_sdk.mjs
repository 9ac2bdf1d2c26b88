// Drives the server with an official TypeScript MCP SDK client: the 1.x
// `@modelcontextprotocol/sdk` (E2E_TS_SDK=1, the default) or the 2.x
// `@modelcontextprotocol/client` (E2E_TS_SDK=2).
//
//   node ts_sdk.mjs --stdio CMD [ARG...]
//   node ts_sdk.mjs --url http://127.0.0.1:PORT/mcp
//
// Same steps and checks as the Python drivers (checks.py), plus:
//   era       which protocol era the client adopted, against E2E_EXPECT_ERA
//             (see checks.py): 1.x always runs `initialize`; 2.x connects
//             with `versionNegotiation: {mode: E2E_TS_NEGOTIATION}`: "auto"
//             (the default here: a `server/discover` probe, the documented
//             way to reach 2026-07-28) or "legacy" (the SDK's own default,
//             `initialize` only), and reports the outcome through
//             getProtocolEra().
//   cancel    a slow call aborted through an AbortSignal: the SDK sends
//             notifications/cancelled; the server must then not answer the
//             cancelled request (a late answer reaches client.onerror as a
//             response for an unknown message id) and must stay usable.
//   progress  a slow call with an onprogress callback: the SDK sets
//             _meta.progressToken to the request id; every notification must
//             carry that token (anything else reaches client.onerror) and
//             progress must never decrease. E2E_PROGRESS_MS sets how long the
//             call runs and E2E_PROGRESS_MIN how many notifications it needs.
//
// The SDK is loaded from the project-local cache (E2E_NODE_MODULES, default
// .cache/node/node_modules beside this repository's e2e folder).

import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const here = dirname(fileURLToPath(import.meta.url));
const modules = process.env.E2E_NODE_MODULES ?? join(here, "..", "..", ".cache", "node", "node_modules");
const require = createRequire(join(modules, "noop.js"));
const V2 = process.env.E2E_TS_SDK === "2";
const sdk = V2
  ? (() => {
      const main = require("@modelcontextprotocol/client");
      const { StdioClientTransport } = require("@modelcontextprotocol/client/stdio");
      return { ...main, StdioClientTransport, McpError: main.ProtocolError, pkg: "client" };
    })()
  : {
      ...require("@modelcontextprotocol/sdk/client/index.js"),
      ...require("@modelcontextprotocol/sdk/client/stdio.js"),
      ...require("@modelcontextprotocol/sdk/client/streamableHttp.js"),
      McpError: require("@modelcontextprotocol/sdk/types.js").McpError,
      pkg: "sdk",
    };
const { Client, StdioClientTransport, StreamableHTTPClientTransport, McpError } = sdk;
const sdkVersion = JSON.parse(
  readFileSync(join(modules, "@modelcontextprotocol", sdk.pkg, "package.json"), "utf8")).version;
const EXPECT_ERA = process.env.E2E_EXPECT_ERA ?? "legacy";
const NEGOTIATION = process.env.E2E_TS_NEGOTIATION ?? "auto";
// callTool(params, options): 2.x dropped 1.x's resultSchema argument.
const callTool = (client, params, options) =>
  V2 ? client.callTool(params, options) : client.callTool(params, undefined, options);

const UNKNOWN_TOOL = "noSuchTool";
const INVALID_PARAMS = -32602;
const MK_RESULT = { status: "ok", value: 7 };
const NEEDED = ["addOne", "mkResult", "maybeDouble", "pureAnswer", "pyFail", "slowEcho", "bigList", "scaleReal"];
// The server reports progress on a 5 s heartbeat: a 5.5 s call gets one.
const PROGRESS_MS = Number(process.env.E2E_PROGRESS_MS ?? 2500);
const PROGRESS_MIN = Number(process.env.E2E_PROGRESS_MIN ?? 3);
const CANCEL_CALL_MS = 1500;

let failed = false;
function step(name, error, detail = "") {
  const ok = error == null;
  failed ||= !ok;
  console.log(JSON.stringify({ step: name, ok, detail: ok ? detail : error }));
  return ok;
}
const crash = (name, e) => step(name, `${e?.constructor?.name ?? "Error"}: ${e?.message ?? e}`);
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
const same = (a, b) => JSON.stringify(a) === JSON.stringify(b);

function firstText(result) {
  const block = Array.isArray(result?.content) ? result.content[0] : undefined;
  return block?.type === "text" && typeof block.text === "string" ? block.text : undefined;
}
const textIs = (expected) => (r) =>
  r.isError ? `unexpected isError result: ${firstText(r)}`
  : firstText(r) !== expected ? `expected text ${JSON.stringify(expected)}, got ${JSON.stringify(firstText(r))}`
  : null;
const structuredIs = (expected) => (r) => {
  if (r.isError) return `unexpected isError result: ${firstText(r)}`;
  if (!same(r.structuredContent, expected)) return `expected structuredContent ${JSON.stringify(expected)}, got ${JSON.stringify(r.structuredContent)}`;
  let parsed;
  try { parsed = JSON.parse(firstText(r)); } catch { parsed = undefined; }
  return same(parsed, expected) ? null : `text block ${JSON.stringify(firstText(r))} does not hold the same value as structuredContent`;
};
const errorMentions = (fragment) => (r) =>
  r.isError !== true ? `expected isError: true, got ${JSON.stringify(r.isError)}`
  : !(firstText(r) ?? "").includes(fragment) ? `expected an error text mentioning ${JSON.stringify(fragment)}, got ${JSON.stringify(firstText(r))}`
  : null;

const CALLS = [
  ["call addOne", "addOne", { _1: 41 }, textIs("42")],
  ["call mkResult", "mkResult", { _1: 7 }, structuredIs(MK_RESULT)],
  ["call maybeDouble", "maybeDouble", {}, textIs("null")],
  ["call pureAnswer", "pureAnswer", {}, textIs("42")],
  ["call pyFail", "pyFail", { _1: 1 }, errorMentions("boom")],
];

// An array- and a number-returning call (SEP-2106): in the modern era the raw
// value is structuredContent, which the client validates against the tool's
// outputSchema; legacy answers carry one for records only (checks.py).
const textOnly = (expected) => (r) =>
  "structuredContent" in r ? `a legacy answer carries structuredContent ${JSON.stringify(r.structuredContent)}`
  : textIs(expected)(r);
const structuredCalls = (modern) => [
  ["structured list", "bigList", { _1: 5 }, modern ? structuredIs([0, 1, 2, 3, 4]) : textOnly("[0,1,2,3,4]")],
  ["structured number", "scaleReal", { _1: 1.5, _2: 2.0 }, modern ? structuredIs(3.0) : textOnly("3.0")],
];

function parseArgs(argv) {
  if (argv[0] === "--stdio" && argv.length >= 2) return { kind: "stdio", target: argv.slice(1) };
  if (argv[0] === "--url" && argv.length === 2) return { kind: "http", target: argv[1] };
  console.error("usage: ts_sdk.mjs --stdio CMD [ARG...] | --url URL");
  process.exit(2);
}

async function main() {
  const { kind, target } = parseArgs(process.argv.slice(2));
  step("client", null, `@modelcontextprotocol/${sdk.pkg} ${sdkVersion} (node ${process.version})`);
  const transport = kind === "stdio"
    ? new StdioClientTransport({ command: target[0], args: target.slice(1), stderr: "inherit" })
    : new StreamableHTTPClientTransport(new URL(target));
  const client = new Client({ name: "morloc-mcp-e2e", version: "1.0.0" },
    V2 ? { versionNegotiation: { mode: NEGOTIATION } } : undefined);
  const clientErrors = [];
  client.onerror = (e) => clientErrors.push(String(e?.message ?? e));

  try {
    await client.connect(transport);
  } catch (e) {
    crash("initialize", e);
    return;
  }
  const info = client.getServerVersion();
  const protocol = V2 ? client.getNegotiatedProtocolVersion() : transport.protocolVersion;
  step("initialize", null, `protocol ${protocol ?? "(not exposed on stdio)"}; server ${info?.name}`);
  // 2.x in "auto" mode: "modern" after an adopted server/discover, else the
  // fallback to initialize; in "legacy" mode and in 1.x: initialize only.
  const era = !V2 || NEGOTIATION === "legacy" ? (V2 && client.getProtocolEra() === "modern" ? "modern" : "legacy")
    : client.getProtocolEra() === "modern" ? "modern" : "fallback";
  const eraDetail = `${era}: ${V2 ? `getProtocolEra() = ${client.getProtocolEra()}, ` : ""}protocol ${protocol}`;
  step("era", era === EXPECT_ERA ? null : `expected the ${EXPECT_ERA} era, the client adopted ${eraDetail}`, eraDetail);

  let names;
  try {
    const { tools } = await client.listTools();
    const listed = tools.map((t) => t.name);
    names = {};
    for (const base of NEEDED) {
      const name = listed.find((n) => n === base || n.endsWith(`__${base}`));
      if (name) names[base] = name;
    }
    const missing = NEEDED.filter((b) => !(b in names));
    const mk = tools.find((t) => t.name === names.mkResult);
    const error = missing.length ? `tools missing from tools/list: ${missing.join(", ")}`
      : !mk?.outputSchema ? "mkResult has no outputSchema" : null;
    if (!step("tools/list", error, `${tools.length} tools`)) return close(client);
  } catch (e) {
    crash("tools/list", e);
    return close(client);
  }

  for (const [name, base, args, check] of [...CALLS, ...structuredCalls(era === "modern")]) {
    try {
      const result = await callTool(client, { name: names[base], arguments: args });
      step(name, check(result), JSON.stringify(result.content).slice(0, 200));
    } catch (e) {
      crash(name, e);
    }
  }

  try {
    const result = await callTool(client, { name: UNKNOWN_TOOL, arguments: {} });
    step("protocol error", `expected a JSON-RPC error, got a result: ${JSON.stringify(result)}`);
  } catch (e) {
    const error = !(e instanceof McpError) ? `expected an McpError, got ${e}`
      : e.code !== INVALID_PARAMS ? `expected JSON-RPC error ${INVALID_PARAMS}, got ${e.code}: ${e.message}`
      : !e.message.includes(UNKNOWN_TOOL) ? `error message does not name the tool: ${e.message}`
      : null;
    step("protocol error", error, e.message);
  }

  await cancelStep(client, names, clientErrors);
  await progressStep(client, names, clientErrors);
  await close(client);
}

async function cancelStep(client, names, clientErrors) {
  const before = clientErrors.length;
  const controller = new AbortController();
  const started = Date.now();
  const call = callTool(client,
    { name: names.slowEcho, arguments: { _1: CANCEL_CALL_MS } }, { signal: controller.signal });
  setTimeout(() => controller.abort("e2e: cancelled on purpose"), 200);
  try {
    await call;
    step("cancel", "the aborted call resolved with a result");
    return;
  } catch {
    // expected: the SDK rejects the call and sends notifications/cancelled
  }
  // Wait until the pool would have answered the cancelled call.
  await sleep(Math.max(0, CANCEL_CALL_MS + 500 - (Date.now() - started)));
  try {
    const result = await callTool(client, { name: names.addOne, arguments: { _1: 1 } });
    const late = clientErrors.slice(before).filter((m) => /unknown message ID/i.test(m));
    const error = late.length ? `the server answered the cancelled request: ${late[0]}` : textIs("2")(result);
    step("cancel", error, "no answer to the cancelled request; next call fine");
  } catch (e) {
    crash("cancel", e);
  }
}

async function progressStep(client, names, clientErrors) {
  const before = clientErrors.length;
  const updates = [];
  try {
    const result = await callTool(client,
      { name: names.slowEcho, arguments: { _1: PROGRESS_MS } },
      { onprogress: (p) => updates.push(p), timeout: PROGRESS_MS + 30000 });
    await sleep(100);
    const stray = clientErrors.slice(before).filter((m) => /progress/i.test(m));
    const values = updates.map((u) => u.progress);
    const decreasing = values.some((v, i) => i > 0 && v < values[i - 1]);
    const error = textIs(String(PROGRESS_MS))(result)
      ?? (stray.length ? `progress notification the SDK could not match: ${stray[0]}` : null)
      ?? (updates.length < PROGRESS_MIN ? `expected at least ${PROGRESS_MIN} progress notifications in ${PROGRESS_MS} ms, got ${updates.length}` : null)
      ?? (decreasing ? `progress decreased: ${JSON.stringify(values)}` : null);
    step("progress", error, `${updates.length} notifications: ${JSON.stringify(updates).slice(0, 200)}`);
  } catch (e) {
    crash("progress", e);
  }
}

async function close(client) {
  try {
    await client.close();
  } catch (e) {
    crash("shutdown", e);
  }
}

main().then(() => process.exit(failed ? 1 : 0), (e) => { crash("driver", e); process.exit(1); });
