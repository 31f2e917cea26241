// Measures a rendered report.html against what its layout promises, in the browser that
// rendered it; evaluated by tests/support/report_layout.py. Every <details> is opened first,
// so what a reader can unfold is measured too. Returns counts and problems in words, each
// naming what went wrong and by how much.
(() => {
  const SEPARATORS = "-_./:@ "; // an identifier may wrap after these, nowhere else
  const MIN_CHART_PX = 11;
  const SLACK = 0.5; // sub-pixel rounding
  const problems = [];
  const root = document.documentElement;
  for (const d of document.querySelectorAll("details")) d.open = true;
  const viewport = root.clientWidth; // the visible width, without a vertical scrollbar
  const px = (n) => Math.round(n * 10) / 10;
  const shown = (el) => el.getClientRects().length > 0;

  const name = (el) => {
    let text = el.tagName.toLowerCase();
    if (el.id) text += "#" + el.id;
    else if (typeof el.className === "string" && el.className.trim())
      text += "." + el.className.trim().split(/\s+/).join(".");
    const section = el.closest("section");
    if (section && section !== el && section.id) text += " in #" + section.id;
    return text;
  };
  const tableName = (table) => {
    const caption = table.querySelector("caption");
    const heads = [...table.querySelectorAll("thead th")].slice(0, 3).map((th) => th.textContent.trim());
    let text = name(table);
    if (caption) text += ` ("${caption.textContent.trim().slice(0, 50)}")`;
    return text + ` [${heads.join(", ")}, ...]`;
  };

  // 1. No sideways scrolling of the page: name the outermost things that stick out.
  if (root.scrollWidth > viewport) {
    const out = [];
    for (const el of document.body.querySelectorAll("*")) {
      if (!shown(el)) continue;
      const right = el.getBoundingClientRect().right;
      const parent = el.parentElement;
      if (right > viewport + SLACK && parent.getBoundingClientRect().right <= viewport + SLACK)
        out.push(`${name(el)} reaches ${px(right)} px`);
    }
    problems.push(
      `the page is ${root.scrollWidth} px wide in a ${viewport} px viewport ` +
        `(${root.scrollWidth - viewport} px to scroll sideways): ${out.slice(0, 6).join("; ")}` +
        (out.length > 6 ? `; and ${out.length - 6} more` : ""),
    );
  }

  // 2. Every table, or the box it scrolls in, ends inside the viewport.
  const tables = [...document.querySelectorAll("table")].filter(shown);
  for (const table of tables) {
    const box = table.closest(".scroll") || table;
    const rect = box.getBoundingClientRect();
    if (rect.right > viewport + SLACK)
      problems.push(
        `${tableName(table)} ends at ${px(rect.right)} px, ` +
          `${px(rect.right - viewport)} px past the ${viewport} px viewport`,
      );
  }

  // 3. A table wider than its box scrolls in it and keeps its first column in view.
  let scrolling = 0;
  for (const box of document.querySelectorAll(".scroll")) {
    if (!shown(box) || box.scrollWidth <= box.clientWidth) continue;
    scrolling += 1;
    const left = box.getBoundingClientRect().left;
    box.scrollLeft = box.scrollWidth;
    const cells = [...box.querySelectorAll("tbody tr > td:first-child")].slice(0, 3);
    for (const cell of cells) {
      // A cell spanning the row (a cluster's restore points) keeps its text in view.
      const shown = cell.colSpan > 1 && cell.firstElementChild ? cell.firstElementChild : cell;
      const at = shown.getBoundingClientRect().left;
      if (Math.abs(at - left) > 1) {
        problems.push(
          `${tableName(box.querySelector("table"))} scrolls inside its box, and its first ` +
            `column scrolls out of view with it: "${cell.textContent.trim().slice(0, 40)}" ` +
            `at ${px(at)} px, ${px(left - at)} px left of the box`,
        );
        break; // one cell says it for the table
      }
    }
    box.scrollLeft = 0;
  }

  // 4. Identifiers wrap at their separators only: no line ends between two characters of
  // one text node unless the first is a separator or white space (a block child or a <wbr>
  // starts another text node, so only a wrap inside a word is caught).
  const range = document.createRange();
  const wrapped = [];
  const identifiers = [...document.querySelectorAll(".ident, td.name, td.id")].filter(shown);
  for (const el of identifiers) {
    range.selectNodeContents(el);
    const tops = new Set([...range.getClientRects()].map((r) => Math.round(r.top)));
    if (tops.size < 2) continue; // on one line
    const walker = document.createTreeWalker(el, NodeFilter.SHOW_TEXT);
    let broken = null;
    for (let node = walker.nextNode(); node && !broken; node = walker.nextNode()) {
      range.selectNodeContents(node);
      if (new Set([...range.getClientRects()].map((r) => Math.round(r.top))).size < 2) continue;
      let before = null; // [character, top] of the last character drawn
      for (let i = 0; i < node.length && !broken; i++) {
        range.setStart(node, i);
        range.setEnd(node, i + 1);
        const rects = range.getClientRects();
        const c = node.data[i];
        if (!rects.length || /\s/.test(c)) {
          before = null; // white space: a line may end here
          continue;
        }
        const top = rects[0].top;
        if (before && top > before[1] + rects[0].height / 2 && !SEPARATORS.includes(before[0]))
          broken = `"${node.data.slice(Math.max(0, i - 12), i)}|${node.data.slice(i, i + 12)}"`;
        before = [c, top];
      }
    }
    if (broken) wrapped.push(`"${el.textContent.trim().slice(0, 60)}" (${name(el)}): ${broken}`);
  }
  if (wrapped.length)
    problems.push(
      `${wrapped.length} identifiers wrap inside a word: ${wrapped.slice(0, 3).join("; ")}` +
        (wrapped.length > 3 ? "; ..." : ""),
    );

  // 5. Chart labels are at least MIN_CHART_PX high on the screen, however the SVG scales.
  const charts = [...document.querySelectorAll("svg")].filter(shown);
  let labels = 0;
  let small = 0;
  const smallCharts = new Set();
  let smallest = null;
  for (const svg of charts) {
    for (const text of svg.querySelectorAll("text")) {
      if (!shown(text)) continue;
      labels += 1;
      const size = parseFloat(getComputedStyle(text).fontSize) * text.getScreenCTM().a;
      if (size < MIN_CHART_PX - 0.05) {
        small += 1;
        smallCharts.add(svg);
        if (smallest === null || size < smallest[0])
          smallest = [size, text.textContent.trim(), name(svg.closest("[id]") || svg)];
      }
    }
  }
  if (small)
    problems.push(
      `${small} of ${labels} chart labels, in ${smallCharts.size} of ${charts.length} charts, ` +
        `are under ${MIN_CHART_PX} px on screen; the smallest, "${smallest[1]}" in ` +
        `${smallest[2]}, is ${px(smallest[0])} px`,
    );

  return {
    viewport,
    scrollWidth: root.scrollWidth,
    tables: tables.length,
    scrolling,
    identifiers: document.querySelectorAll(".ident").length,
    charts: charts.length,
    labels,
    problems,
  };
})()
