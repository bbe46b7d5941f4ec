/**
 * The API docs page (GET /docs): renders the server's own /openapi.json with nothing but this
 * script, so it works offline and never drifts from the document. Each operation can be tried with
 * the ApiKey at the top; the request goes to this same server.
 */

interface Parameter {
  name: string;
  in: string;
  required?: boolean;
  description?: string;
  example?: unknown;
  schema?: { type?: string };
}

interface Operation {
  operationId?: string;
  summary?: string;
  description?: string;
  tags?: string[];
  parameters?: Parameter[];
  responses?: Record<string, { description?: string; content?: Record<string, { example?: unknown }> }>;
  "x-relgraph-rpc"?: string;
}

interface Document {
  info: { title: string; version: string; description?: string };
  paths: Record<string, Record<string, Operation>>;
}

/** The ApiKey `relgraph serve` prints when it runs on the embedded store without API_KEYS. */
const DEV_API_KEY = "relgraph-dev-key";

const $ = <T extends HTMLElement = HTMLElement>(id: string) => document.getElementById(id) as T;

function element<K extends keyof HTMLElementTagNameMap>(tag: K, text?: string, className?: string): HTMLElementTagNameMap[K] {
  const node = document.createElement(tag);
  if (text !== undefined) node.textContent = text;
  if (className) node.className = className;
  return node;
}

async function main(): Promise<void> {
  $<HTMLInputElement>("apikey").value = new URLSearchParams(location.search).get("apiKey") ?? DEV_API_KEY;
  const response = await fetch("/openapi.json");
  const doc = (await response.json()) as Document;
  document.title = `${doc.info.title} ${doc.info.version}`;
  $("description").textContent = doc.info.description ?? "";

  // Operations served at several paths (two spellings) are shown once, with their other paths.
  const byRpc = new Map<string, { path: string; operation: Operation; aliases: string[] }>();
  const others: HTMLElement[] = [];
  for (const [path, methods] of Object.entries(doc.paths)) {
    for (const [method, operation] of Object.entries(methods)) {
      const rpc = operation["x-relgraph-rpc"];
      if (rpc === undefined || method !== "get") {
        others.push(element("p", `${method.toUpperCase()} ${path}: ${operation.summary ?? ""}`));
        continue;
      }
      const known = byRpc.get(rpc);
      if (known) known.aliases.push(path);
      else byRpc.set(rpc, { path, operation, aliases: [] });
    }
  }
  $("operations").replaceChildren(...[...byRpc].map(([rpc, { path, operation, aliases }]) => renderOperation(rpc, path, operation, aliases)));
  $("other-routes").replaceChildren(...others);
  document.body.dataset.state = "ready";
}

function renderOperation(rpc: string, path: string, operation: Operation, aliases: string[]): HTMLElement {
  const section = element("section", undefined, "operation");
  section.dataset.rpc = rpc;
  const title = element("h3");
  title.append(element("span", "GET", "method"), element("span", path, "path"));
  section.append(title, element("p", operation.summary ?? ""), element("p", operation.description ?? ""));
  if (aliases.length > 0) section.append(element("p", `Also served at ${aliases.join(", ")}.`));

  const form = element("form", undefined, "params");
  const inputs = new Map<string, HTMLInputElement>();
  for (const parameter of operation.parameters ?? []) {
    const label = element("label", `${parameter.name}${parameter.required ? " *" : ""}`);
    label.title = parameter.description ?? "";
    const input = element("input");
    input.name = parameter.name;
    input.placeholder = parameter.description ?? "";
    const example = parameter.example;
    if (example !== undefined) input.value = Array.isArray(example) ? example.join(",") : String(example);
    inputs.set(parameter.name, input);
    form.append(label, input);
  }
  const send = element("button", "Send");
  send.type = "submit";
  form.append(element("span"), send);
  const output = element("pre", "", "response");
  output.hidden = true;
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    void tryIt(path, inputs, output);
  });

  const responses = element("details");
  responses.append(element("summary", "Responses"));
  for (const [status, { description, content }] of Object.entries(operation.responses ?? {})) {
    responses.append(element("p", `${status}: ${description ?? ""}`));
    const example = content?.["application/json"]?.example;
    if (example !== undefined) responses.append(element("pre", JSON.stringify(example, null, 2)));
  }
  section.append(form, output, responses);
  return section;
}

async function tryIt(path: string, inputs: Map<string, HTMLInputElement>, output: HTMLElement): Promise<void> {
  const query = new URLSearchParams();
  for (const [name, input] of inputs) if (input.value.trim() !== "") query.set(name, input.value.trim());
  output.hidden = false;
  output.textContent = `GET ${path}?${query} …`;
  try {
    const response = await fetch(`${path}?${query}`, { headers: { ApiKey: $<HTMLInputElement>("apikey").value } });
    const body = await response.text();
    let shown = body;
    try {
      shown = JSON.stringify(JSON.parse(body), null, 2);
    } catch {
      // Not JSON: show it as it came.
    }
    output.textContent = `HTTP ${response.status}\n${shown}`;
    output.dataset.status = String(response.status);
  } catch (error) {
    output.textContent = `request failed: ${String(error)}`;
    output.dataset.status = "failed";
  }
}

main().catch((error: unknown) => {
  $("error").textContent = `cannot load /openapi.json: ${String(error)}`;
  $("error").hidden = false;
  document.body.dataset.state = "failed";
});
