// The named operations of operations.graphql, each cut out as a document of its own (the
// operation and the fragments it spreads): the server limits each document's size, and one
// operation per request keeps every request small.

const DEFINITION = /^(query|mutation|subscription|fragment)\s+([_A-Za-z][_0-9A-Za-z]*)/;

/** Top-level definitions of a GraphQL document, as {kind, name, text}; comments dropped. */
export function definitions(source) {
  const found = [];
  let depth = 0;
  let text = "";
  for (let i = 0; i < source.length; i += 1) {
    const c = source[i];
    if (c === "#") {
      while (i < source.length && source[i] !== "\n") i += 1;
      continue;
    }
    if (c === '"') {
      const block = source.startsWith('"""', i);
      const end = block ? source.indexOf('"""', i + 3) + 3 : source.indexOf('"', i + 1) + 1;
      text += source.slice(i, end);
      i = end - 1;
      continue;
    }
    text += c;
    if (c === "{") depth += 1;
    if (c === "}") {
      depth -= 1;
      if (depth === 0) {
        const body = text.trim();
        const match = DEFINITION.exec(body);
        if (!match) throw new Error("operations.graphql: an unnamed definition: " + body);
        found.push({ kind: match[1], name: match[2], text: body });
        text = "";
      }
    }
  }
  return found;
}

function spreads(text) {
  return [...text.matchAll(/\.\.\.\s*([_A-Za-z][_0-9A-Za-z]*)/g)]
    .map((m) => m[1])
    .filter((name) => name !== "on");
}

/** A map of operation name to {kind, document}: the operation and every fragment it needs. */
export function operations(source) {
  const all = definitions(source);
  const fragments = new Map(all.filter((d) => d.kind === "fragment").map((d) => [d.name, d]));
  const result = new Map();
  for (const operation of all.filter((d) => d.kind !== "fragment")) {
    const needed = [];
    const todo = spreads(operation.text);
    while (todo.length) {
      const name = todo.pop();
      if (needed.includes(name)) continue;
      const fragment = fragments.get(name);
      if (!fragment) throw new Error(`operations.graphql: ${operation.name} needs ...${name}`);
      needed.push(name);
      todo.push(...spreads(fragment.text));
    }
    const parts = [operation.text, ...needed.map((name) => fragments.get(name).text)];
    result.set(operation.name, { kind: operation.kind, document: parts.join("\n\n") });
  }
  return result;
}

export async function loadOperations(url) {
  const response = await fetch(url, { cache: "no-cache" });
  if (!response.ok) throw new Error(`could not load ${url}: HTTP ${response.status}`);
  return operations(await response.text());
}
