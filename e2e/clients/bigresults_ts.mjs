// Big results as resources with the official TypeScript client 2.x
// (@modelcontextprotocol/client).
//
//   node bigresults_ts.mjs N CMD [ARG...]   // the client starts the server
//   node bigresults_ts.mjs N URL            // a server serving HTTP at URL
//
// The server (CMD) runs with --max-result-chars; the shapes program's
// `bigList N` then comes back as a link (tools are looked up by base name
// in tools/list: `bigList`, or `<module>__bigList` through the router).
// E2E_TS_NEGOTIATION picks the client's versionNegotiation mode: "auto"
// (the default: server/discover, so 2026-07-28 here) or "legacy"
// (initialize). Steps (one JSON line each):
//   connect   the client over stdio
//   link      bigList N: a preview, a resource_link and the link object as
//             structuredContent; the client validates structuredContent
//             against the tool's outputSchema (listed first)
//   record    mkResult, a record result longer than the limit: its link
//             object passes the record tool's outputSchema (anyOf)
//   templates resources/templates/list names the page template
//   pages     resources/read page by page (following _meta.next): the
//             pages reassemble the list exactly, 0..N-1
//
// The client is loaded from E2E_NODE_MODULES (default .cache/node/node_modules
// beside this repository's e2e folder).

import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const here = dirname(fileURLToPath(import.meta.url));
const modules = process.env.E2E_NODE_MODULES ?? join(here, "..", "..", ".cache", "node", "node_modules");
const require = createRequire(join(modules, "noop.js"));
const { Client, StreamableHTTPClientTransport } = require("@modelcontextprotocol/client");
const { StdioClientTransport } = require("@modelcontextprotocol/client/stdio");
const version = JSON.parse(
  readFileSync(join(modules, "@modelcontextprotocol", "client", "package.json"), "utf8")).version;

const PAGE = 500_000;
let failed = false;
function step(name, error, detail = "") {
  const ok = error == null;
  failed ||= !ok;
  console.log(JSON.stringify({ step: name, ok, detail: ok ? detail : error }));
  return ok;
}

function linkOf(result, kind, count) {
  const content = result.content ?? [];
  if (content.length !== 2 || content[1].type !== "resource_link") {
    return [null, `expected text + resource_link, got ${JSON.stringify(content).slice(0, 300)}`];
  }
  const link = result.structuredContent?.resultLink ?? {};
  if (link.uri !== content[1].uri || link.type !== kind || link.count !== count) {
    return [null, `link object ${JSON.stringify(link)} does not match ${JSON.stringify(content[1])}`];
  }
  return [link.uri, null];
}

const [n, command, ...args] = [Number(process.argv[2]), ...process.argv.slice(3)];
const transport = command.startsWith("http")
  ? new StreamableHTTPClientTransport(new URL(command))
  : new StdioClientTransport({ command, args, stderr: "inherit" });
// The SDK gives up on a request after 60 s by default; a 5 M-element list
// on a busy machine can take longer. The check is of the pages, not of
// their speed: a wait no load reaches.
const WAIT = { timeout: 600_000 };
const client = new Client({ name: "morloc-mcp-e2e", version: "1.0.0" },
  { versionNegotiation: { mode: process.env.E2E_TS_NEGOTIATION ?? "auto" } });
try {
  await client.connect(transport);
  step("connect", null, `@modelcontextprotocol/client ${version}; era ${client.getProtocolEra?.() ?? "?"}`);
  const listed = (await client.listTools()).tools.map((t) => t.name);
  const name = (base) => listed.find((t) => t === base || t.endsWith(`__${base}`)) ?? base;
  let started = Date.now();
  const result = await client.callTool({ name: name("bigList"), arguments: { _1: n } }, WAIT);
  const [uri, why] = linkOf(result, "list", n);
  step("link", why, `${name("bigList")}: ${uri} in ${((Date.now() - started) / 1000).toFixed(1)} s`);
  const record = await client.callTool({ name: name("mkResult"), arguments: { _1: 7 } }, WAIT);
  const [, whyRecord] = linkOf(record, "record", '{"status":"ok","value":7}'.length);
  step("record", whyRecord, "the link object validates against anyOf(record, link)");
  const templates = await client.listResourceTemplates();
  const names = templates.resourceTemplates.map((t) => t.uriTemplate);
  step("templates", names.length === 1 && names[0] === "morloc://result/{id}{?offset,limit}"
    ? null : `templates ${JSON.stringify(names)}`, JSON.stringify(names));
  if (uri) {
    started = Date.now();
    let expected = 0;
    let pages = 0;
    let error = null;
    let pageUri = `${uri}?offset=0&limit=${PAGE}`;
    while (pageUri) {
      const read = await client.readResource({ uri: pageUri }, WAIT);
      const content = read.contents[0];
      const items = JSON.parse(content.text);
      if (!items.every((v, i) => v === expected + i)) {
        error = `page ${pageUri} does not continue at ${expected}`;
        break;
      }
      expected += items.length;
      pages += 1;
      pageUri = content._meta?.next;
    }
    if (error == null && expected !== n) error = `the pages hold ${expected} elements, not ${n}`;
    step("pages", error, `${pages} pages of ${PAGE} reassemble 0..${n - 1} in ${((Date.now() - started) / 1000).toFixed(1)} s`);
  }
} catch (e) {
  step("crash", `${e?.constructor?.name ?? "Error"}: ${e?.message ?? e}`);
} finally {
  await client.close();
}
process.exit(failed ? 1 : 0);
