// A small, safe Markdown renderer for the demo page: it builds DOM nodes, never HTML strings,
// so a model's answer cannot inject markup. Raw HTML in the text stays text.
//
// Blocks: paragraphs, ATX headings (#..######), fenced code (``` with an optional language),
// bullet and numbered lists (one level), block quotes, horizontal rules. Inline: `code`,
// **bold**, *italic* / _italic_, [links](https://...) and bare http(s) URLs. Links open in a
// new tab with rel="noopener noreferrer"; only http:, https: and mailto: targets are links.
// An unclosed fence (an answer still streaming) renders as a code block so far.
import { el as node } from "./dom.js";

const SAFE_URL = /^(https?:|mailto:)/i;
const INLINE = /(`+)([^`]|[^`][\s\S]*?[^`])\1(?!`)|\*\*([^*\n]+?)\*\*|\*([^*\s][^*\n]*?)\*|(?<![\w])_([^_\s][^_\n]*?)_(?![\w])|\[([^\]\n]+)\]\(([^()\s]+)\)|(https?:\/\/[^\s<>()]*[^\s<>().,;:!?'"])/;


function link(href, text) {
  if (!SAFE_URL.test(href)) return document.createTextNode(text === href ? text : `${text} (${href})`);
  const a = node("a", "", text);
  a.href = href;
  a.target = "_blank";
  a.rel = "noopener noreferrer";
  return a;
}

/** Inline Markdown of one block's text, appended to `parent`. */
export function renderInline(text, parent) {
  let rest = text;
  while (rest) {
    const m = INLINE.exec(rest);
    if (!m) {
      parent.append(rest);
      break;
    }
    if (m.index) parent.append(rest.slice(0, m.index));
    if (m[1]) parent.append(node("code", "", m[2]));
    else if (m[3]) renderInline(m[3], parent.appendChild(node("strong")));
    else if (m[4]) renderInline(m[4], parent.appendChild(node("em")));
    else if (m[5]) renderInline(m[5], parent.appendChild(node("em")));
    else if (m[6]) parent.append(link(m[7], m[6]));
    else parent.append(link(m[8], m[8]));
    rest = rest.slice(m.index + m[0].length);
  }
  return parent;
}

function codeBlock(lang, code, onCopy) {
  const box = node("div", "code-block");
  const head = node("div", "code-head");
  head.append(node("span", "code-lang", lang || "code"));
  const copy = node("button", "ghost copy", "Copy");
  copy.type = "button";
  copy.addEventListener("click", () => onCopy(code, copy));
  head.append(copy);
  const pre = node("pre");
  pre.append(node("code", lang ? `language-${lang}` : "", code));
  box.append(head, pre);
  return box;
}

const FENCE = /^\s{0,3}(`{3,}|~{3,})\s*([\w+-]*)/;
const HEADING = /^\s{0,3}(#{1,6})\s+(.*?)\s*#*\s*$/;
const BULLET = /^\s{0,3}[-*+]\s+(.*)$/;
const NUMBERED = /^\s{0,3}(\d{1,9})[.)]\s+(.*)$/;
const QUOTE = /^\s{0,3}>\s?(.*)$/;
const RULE = /^\s{0,3}([-*_])(\s*\1){2,}\s*$/;

/**
 * Markdown text as a DocumentFragment.
 * @param {string} text The Markdown.
 * @param {(code: string, button: HTMLElement) => void} onCopy Called by a code block's Copy.
 */
export function renderMarkdown(text, onCopy) {
  const out = document.createDocumentFragment();
  const lines = text.split("\n");
  let i = 0;
  while (i < lines.length) {
    const line = lines[i];
    const fence = FENCE.exec(line);
    if (fence) {
      const body = [];
      i += 1;
      while (i < lines.length && !lines[i].trim().startsWith(fence[1])) body.push(lines[i++]);
      i += 1; // the closing fence (or the end of a text still streaming)
      out.append(codeBlock(fence[2], body.join("\n"), onCopy));
      continue;
    }
    if (!line.trim()) {
      i += 1;
      continue;
    }
    const heading = HEADING.exec(line);
    if (heading) {
      out.append(renderInline(heading[2], node(`h${Math.min(6, heading[1].length + 2)}`, "md-h")));
      i += 1;
      continue;
    }
    if (RULE.test(line)) {
      out.append(node("hr"));
      i += 1;
      continue;
    }
    const kind = BULLET.test(line) ? BULLET : NUMBERED.test(line) ? NUMBERED : null;
    if (kind) {
      const list = node(kind === BULLET ? "ul" : "ol");
      const first = NUMBERED.exec(line);
      if (kind === NUMBERED && first[1] !== "1") list.start = Number(first[1]);
      while (i < lines.length && kind.test(lines[i])) {
        const m = kind.exec(lines[i]);
        renderInline(m[m.length - 1], list.appendChild(node("li")));
        i += 1;
      }
      out.append(list);
      continue;
    }
    if (QUOTE.test(line)) {
      const quoted = [];
      while (i < lines.length && QUOTE.test(lines[i])) quoted.push(QUOTE.exec(lines[i++])[1]);
      const quote = node("blockquote");
      quote.append(renderMarkdown(quoted.join("\n"), onCopy));
      out.append(quote);
      continue;
    }
    const para = [];
    while (
      i < lines.length && lines[i].trim() && !FENCE.test(lines[i]) && !HEADING.test(lines[i])
      && !BULLET.test(lines[i]) && !NUMBERED.test(lines[i]) && !QUOTE.test(lines[i])
    ) para.push(lines[i++]);
    const p = node("p");
    para.forEach((text, n) => {
      if (n) p.append(node("br"));
      renderInline(text, p);
    });
    out.append(p);
  }
  return out;
}
