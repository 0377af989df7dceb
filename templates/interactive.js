/* roofreport's interactive HTML (the PDF has none of this): hover or focus a roofline point for
   its run, kernel, intensity, FLOP/s and time; untick a run to hide its marks; click a sortable
   table's heading to sort its rows. It reads only the data- attributes the report wrote (escaped
   text, formatted from the analysis frames: nothing is computed here), writes only textContent,
   and loads nothing. Included by Jinja: never two braces in a row here. */
(function () {
  "use strict";
  // [attribute, key, optional]: an optional line (a sized series' input size) only where written
  var FIELDS = [["data-name", ""], ["data-run", "run"], ["data-input", "input", true], ["data-ai", "AI"],
                ["data-perf", "FLOP/s"], ["data-time", "time"]];
  var COLOUR = /^#[0-9A-Fa-f]{6}$/;
  var each = function (list, fn) { Array.prototype.forEach.call(list, fn); };

  function showTip(tip, figure, point, at) {
    tip.textContent = "";
    FIELDS.forEach(function (field) {
      if (field[2] && !point.hasAttribute(field[0])) return;
      var line = document.createElement("div");
      if (field[1]) {
        var key = document.createElement("span");
        key.className = "key";
        key.textContent = field[1] + " ";
        line.appendChild(key);
      }
      line.appendChild(document.createTextNode(point.getAttribute(field[0]) || "\u2013"));
      tip.appendChild(line);
    });
    var box = figure.getBoundingClientRect();
    tip.style.left = Math.max(0, at.x - box.left + 12) + "px";
    tip.style.top = Math.max(0, at.y - box.top + 12) + "px";
    tip.hidden = false;
  }

  function pointOf(event) {
    var target = event.target;
    return target && target.closest ? target.closest("g.point") : null;
  }

  function hover(figure) {
    var tip = document.createElement("div");
    tip.className = "point-tip";
    tip.setAttribute("role", "tooltip");
    tip.hidden = true;
    figure.appendChild(tip);
    figure.addEventListener("mouseover", function (event) {
      var point = pointOf(event);
      if (point) showTip(tip, figure, point, { x: event.clientX, y: event.clientY });
    });
    figure.addEventListener("focusin", function (event) {
      var point = pointOf(event);
      if (!point) return;
      var box = point.getBoundingClientRect();
      showTip(tip, figure, point, { x: box.right, y: box.bottom });
    });
    var hide = function (event) { if (pointOf(event)) tip.hidden = true; };
    figure.addEventListener("mouseout", hide);
    figure.addEventListener("focusout", hide);
  }

  function toggles(figure) {
    var marks = figure.querySelectorAll("[data-run]");
    var runs = [];
    each(figure.querySelectorAll("g.point"), function (point) {
      var name = point.getAttribute("data-run");
      if (runs.every(function (run) { return run.name !== name; })) {
        runs.push({ name: name, colour: point.getAttribute("data-colour") || "",
                    series: Number(point.getAttribute("data-series")) || 0 });
      }
    });
    runs.sort(function (first, second) { return first.series - second.series; });   /* the legend's order */
    if (runs.length < 2) return;
    var box = document.createElement("fieldset");
    box.className = "run-toggles";
    var legend = document.createElement("legend");
    legend.textContent = "Runs shown";
    box.appendChild(legend);
    runs.forEach(function (run) {
      var label = document.createElement("label");
      var input = document.createElement("input");
      input.type = "checkbox";
      input.checked = true;
      var swatch = document.createElement("span");
      swatch.className = "swatch";
      if (COLOUR.test(run.colour)) swatch.style.backgroundColor = run.colour;
      label.appendChild(input);
      label.appendChild(swatch);
      label.appendChild(document.createTextNode(run.name));
      input.addEventListener("change", function () {
        each(marks, function (mark) {
          if (mark.getAttribute("data-run") === run.name) mark.classList.toggle("off", !input.checked);
        });
      });
      box.appendChild(label);
    });
    figure.insertBefore(box, figure.querySelector("figcaption"));
  }

  /* Rows whose first cell is "other kernels" or a total stay last, in their order. */
  function fixedRow(row) {
    var first = row.cells[0];
    return !!first && (first.classList.contains("rest") || first.classList.contains("total"));
  }

  function sortKey(cell, numeric) {
    if (!cell) return null;
    if (numeric) {
      var value = cell.hasAttribute("data-sort") ? Number(cell.getAttribute("data-sort")) : NaN;
      return isNaN(value) ? null : value;
    }
    var text = cell.textContent.trim();
    return text && text !== "\u2013" ? text : null;
  }

  function sortBy(table, heading, column) {
    var body = table.tBodies[0];
    var rows = Array.prototype.slice.call(body.rows);
    var moving = rows.filter(function (row) { return !fixedRow(row); });
    var numeric = moving.some(function (row) {
      return row.cells[column] && row.cells[column].hasAttribute("data-sort");
    });
    var now = heading.getAttribute("aria-sort");
    var descending = now ? now === "ascending" : numeric;
    each(heading.parentNode.cells, function (cell) { cell.removeAttribute("aria-sort"); });
    heading.setAttribute("aria-sort", descending ? "descending" : "ascending");
    var keyed = moving.map(function (row) { return { row: row, key: sortKey(row.cells[column], numeric) }; });
    keyed.sort(function (first, second) {
      if (first.key === null || second.key === null) {      /* blanks last, either way */
        return (first.key === null) - (second.key === null);
      }
      var order = numeric ? first.key - second.key
        : first.key.localeCompare(second.key, undefined, { numeric: true, sensitivity: "base" });
      return descending ? -order : order;
    });
    keyed.forEach(function (item) { body.appendChild(item.row); });
    rows.filter(fixedRow).forEach(function (row) { body.appendChild(row); });
  }

  function sortable(table) {
    if (!table.tHead || !table.tBodies.length) return;
    each(table.tHead.rows[0].cells, function (heading, column) {
      heading.tabIndex = 0;
      var go = function () { sortBy(table, heading, column); };
      heading.addEventListener("click", go);
      heading.addEventListener("keydown", function (event) {
        if (event.key === "Enter" || event.key === " ") {
          event.preventDefault();
          go();
        }
      });
    });
  }

  each(document.querySelectorAll("figure.chart.interactive"), function (figure) {
    hover(figure);
    toggles(figure);
  });
  each(document.querySelectorAll("table.data.sortable"), sortable);
}());
