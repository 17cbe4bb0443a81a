// Small DOM helpers: elements from plain data, never from HTML strings.

/** An element: h("a", {href: "#/", class: "x", onclick: fn}, "text", child, [more]). */
export function h(tag, attributes = {}, ...children) {
  const element = document.createElement(tag);
  for (const [key, value] of Object.entries(attributes || {})) {
    if (value === null || value === undefined || value === false) continue;
    if (key.startsWith("on") && typeof value === "function") {
      element.addEventListener(key.slice(2), value);
    } else if (key === "class") {
      element.className = value;
    } else if (key === "dataset") {
      for (const [name, data] of Object.entries(value)) {
        if (data !== null && data !== undefined) element.dataset[name] = data; // never "null"
      }
    } else if (value === true) {
      element.setAttribute(key, "");
    } else {
      element.setAttribute(key, String(value));
    }
  }
  append(element, children);
  return element;
}

export function append(parent, children) {
  for (const child of children.flat(Infinity)) {
    if (child === null || child === undefined || child === false) continue;
    parent.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return parent;
}

/** An SVG element (namespaced), with attributes only. */
export function svg(tag, attributes = {}, ...children) {
  const element = document.createElementNS("http://www.w3.org/2000/svg", tag);
  for (const [key, value] of Object.entries(attributes)) {
    if (value !== null && value !== undefined) element.setAttribute(key, String(value));
  }
  append(element, children);
  return element;
}

export function clear(element) {
  element.replaceChildren();
  return element;
}

export function when(iso) {
  if (!iso) return "";
  const date = new Date(iso);
  return date.toLocaleString(undefined, { dateStyle: "medium", timeStyle: "medium" });
}

export function words(enumValue) {
  return enumValue.toLowerCase().replaceAll("_", " ");
}

/** The hash route's path and query, e.g. "#/agents?name=x" as ["/agents", URLSearchParams]. */
export function currentRoute() {
  const raw = location.hash.replace(/^#/, "") || "/";
  const [path, query] = raw.split("?", 2);
  return [path || "/", new URLSearchParams(query || "")];
}

export function routeLink(path, params) {
  const query = new URLSearchParams(
    Object.entries(params).filter(([, value]) => value !== null && value !== undefined && value !== ""),
  ).toString();
  return "#" + path + (query ? "?" + query : "");
}
