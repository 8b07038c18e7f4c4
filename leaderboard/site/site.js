// The leaderboard site's tables: a click on a header of a table.sortable sorts its rows (numbers by their
// data-sort value, cells without a number last), and each form.filters shows only the rows of its table
// (data-table) whose data-<name> attributes equal every chosen value. Nothing is fetched.
"use strict";

function sortKey(row, index, numeric) {
  const cell = row.cells[index];
  if (!numeric) return cell ? cell.textContent.trim().toLowerCase() : "";
  const value = cell ? cell.getAttribute("data-sort") : null;
  return value === null || value === "" ? null : parseFloat(value);
}

function sortTable(table, header) {
  const index = Array.prototype.indexOf.call(header.parentNode.children, header);
  const numeric = header.getAttribute("data-type") === "number";
  const ascending = header.getAttribute("aria-sort") !== "ascending";
  const body = table.tBodies[0];
  const rows = Array.from(body.rows);
  rows.sort(function (a, b) {
    const x = sortKey(a, index, numeric), y = sortKey(b, index, numeric);
    if (x === y) return 0;
    if (x === null) return 1;  // no number: last either way
    if (y === null) return -1;
    const order = x < y ? -1 : 1;
    return ascending ? order : -order;
  });
  rows.forEach(function (row) { body.appendChild(row); });
  table.querySelectorAll("thead th").forEach(function (th) { th.removeAttribute("aria-sort"); });
  header.setAttribute("aria-sort", ascending ? "ascending" : "descending");
}

function filterTable(form) {
  const table = document.getElementById(form.getAttribute("data-table"));
  const chosen = Array.from(form.querySelectorAll("select")).filter(function (s) { return s.value !== ""; });
  let shown = 0;
  Array.from(table.tBodies[0].rows).forEach(function (row) {
    const keep = chosen.every(function (s) { return row.getAttribute("data-" + s.name) === s.value; });
    row.hidden = !keep;
    shown += keep ? 1 : 0;
  });
  form.querySelector("output").textContent = shown + " of " + table.tBodies[0].rows.length + " rows";
}

document.addEventListener("DOMContentLoaded", function () {
  document.querySelectorAll("table.sortable thead th").forEach(function (th) {
    const button = document.createElement("button");
    button.type = "button";
    while (th.firstChild) button.appendChild(th.firstChild);
    th.appendChild(button);
    button.addEventListener("click", function () { sortTable(th.closest("table"), th); });
  });
  document.querySelectorAll("form.filters").forEach(function (form) {
    form.addEventListener("change", function () { filterTable(form); });
    form.addEventListener("submit", function (event) { event.preventDefault(); });
    filterTable(form);
  });
});
