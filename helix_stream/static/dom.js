// The one DOM helper the demo page's modules share.

/** A new element: `tag`, with `className` and text (as text, never HTML) when given. */
export function el(tag, className, text) {
  const node = document.createElement(tag);
  if (className) node.className = className;
  if (text !== undefined) node.textContent = text;
  return node;
}
