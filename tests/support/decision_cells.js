// Measures, in the browser that rendered a report.html or forecast.html, whether a reader
// sees every cell of the tables that carry the decision without scrolling sideways;
// evaluated by tests/support/report_layout.py. Every <details> is opened first, so the cells
// a reader can unfold are measured too. Returns counts and each problem in words.
(() => {
  const SLACK = 0.5; // sub-pixel rounding
  // The decision tables, by where they are (so the page before data-label is measured too),
  // and any cell labelled for the narrow layout.
  const TABLES = [
    "#changes table", "#holds table", "#counts table", "#policies table", "#clusters table",
    "#hold-records table", "#advisory table", "table.all",
  ].join(", ");
  for (const d of document.querySelectorAll("details")) d.open = true;
  const viewport = document.documentElement.clientWidth; // without a vertical scrollbar
  const shown = (el) => el.getClientRects().length > 0;
  const px = (n) => Math.round(n * 10) / 10;
  const tables = [...document.querySelectorAll(TABLES)].filter(shown);
  const cells = new Set(tables.flatMap((t) => [...t.querySelectorAll("td, th")]));
  for (const cell of document.querySelectorAll("[data-label]")) cells.add(cell);
  const outside = [];
  const hidden = [];
  let measured = 0;
  for (const cell of cells) {
    if (!shown(cell)) {
      // A header row hidden by the narrow layout, or a zero count it leaves out, is not
      // missing; a labelled cell with a value is.
      if (cell.dataset.label !== undefined && !cell.classList.contains("zero"))
        hidden.push(`${cell.dataset.label}: "${cell.textContent.trim().slice(0, 30)}"`);
      continue;
    }
    measured += 1;
    const rect = cell.getBoundingClientRect();
    if (rect.left < -SLACK || rect.right > viewport + SLACK) {
      const table = cell.closest("table");
      const section = cell.closest("section");
      const column = cell.dataset.label ||
        (table.tHead && cell.cellIndex >= 0 && table.tHead.rows[0].cells[cell.cellIndex]
          ? table.tHead.rows[0].cells[cell.cellIndex].textContent.trim() : cell.tagName);
      outside.push(
        `${section ? "#" + section.id : "table"} column "${column}": ` +
          `"${cell.textContent.trim().slice(0, 30)}" spans ${px(rect.left)}-${px(rect.right)} px`,
      );
    }
  }
  // The distinct columns cut, each with its first cell, so a message stays short.
  const columns = new Map();
  for (const line of outside) {
    const key = line.slice(0, line.indexOf(":"));
    if (!columns.has(key)) columns.set(key, line);
  }
  return {
    viewport,
    innerWidth: window.innerWidth,
    scrollWidth: document.scrollingElement.scrollWidth,
    tables: tables.length,
    asTables: tables.filter((t) => getComputedStyle(t).display === "table").length,
    measured,
    outside: outside.length,
    columns: [...columns.values()],
    hidden,
  };
})()
