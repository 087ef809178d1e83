// Small DOM helpers the playground's modules share: making elements, and showing an error next to a field.

/** `tag` with `attributes` (properties, or `data-*`/`aria-*` attributes) and children. */
export function h(tag, attributes = {}, ...children) {
  const element = document.createElement(tag);
  for (const [name, value] of Object.entries(attributes)) {
    if (name.startsWith("data-") || name.startsWith("aria-") || name === "role" || name === "for") element.setAttribute(name, value);
    else element[name] = value;
  }
  element.append(...children);
  return element;
}

/** Text for screen readers only (which limiter a repeated label belongs to). */
export const hidden = (text) => h("span", { className: "visually-hidden" }, text);

/** Shows `error` (or clears it, with null) in `output`, marking `input` (described by `output`) invalid. */
export function showError(input, output, error) {
  output.textContent = error ? `${error.name}: ${error.message}` : "";
  if (input) {
    if (error) input.setAttribute("aria-invalid", "true");
    else input.removeAttribute("aria-invalid");
  }
}
