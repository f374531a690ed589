(function () {
  "use strict";
  // Hover cards and time zoom for the pytest-latency report. Text reaches the page
  // only through textContent and setAttribute, never as markup.
  document.documentElement.classList.add("js");
  var NS = "http://www.w3.org/2000/svg";
  var source = document.getElementById("latency-data");
  var data = source ? JSON.parse(source.textContent) : { fields: [], rows: [], tests: [] };
  var field = {};
  data.fields.forEach(function (name, index) { field[name] = index; });

  function seconds(value) {
    if (value === null || value === undefined) return "-";
    var size = Math.abs(value);
    if (size < 1e-3) return (value * 1e6).toFixed(0) + "\u00b5s";
    if (size < 1) return (value * 1e3).toFixed(1) + "ms";
    return value.toFixed(2) + "s";
  }

  // ---- hover card -------------------------------------------------------------
  var tip = document.createElement("div");
  tip.id = "tip";
  tip.hidden = true;
  tip.setAttribute("role", "tooltip");
  document.body.appendChild(tip);
  var pinned = false;
  var dragged = false;

  function cell(row, name) { return row[field[name]]; }

  function addRow(table, label, value) {
    var tr = table.insertRow();
    tr.insertCell().textContent = label;
    var td = tr.insertCell();
    if (value instanceof Node) td.appendChild(value); else td.textContent = value;
  }

  function fillCard(row) {
    tip.textContent = "";
    var head = document.createElement("div");
    head.className = "tip-head";
    head.textContent = "request #" + cell(row, "id") + " \u00b7 " + cell(row, "phase") +
      " \u00b7 " + cell(row, "status");
    tip.appendChild(head);
    if (cell(row, "error")) {
      var error = document.createElement("div");
      error.className = "tip-error";
      error.textContent = cell(row, "error");
      tip.appendChild(error);
    }
    var table = document.createElement("table");
    addRow(table, "planned send", "+" + seconds(cell(row, "planned_s")) + " (lag " +
      seconds(cell(row, "lag_s")) + ")");
    addRow(table, "TTFT", seconds(cell(row, "ttft_s")));
    addRow(table, "queue wait", seconds(cell(row, "queue_s")));
    addRow(table, "prefill", seconds(cell(row, "prefill_s")));
    addRow(table, "unattributed", seconds(cell(row, "unattributed_s")));
    addRow(table, "end-to-end", seconds(cell(row, "e2e_s")));
    var tokens = cell(row, "output_tokens");
    addRow(table, "output tokens", tokens === null ? "-" : String(tokens));
    var trace = cell(row, "trace_id") || "no trace id";
    var code = document.createElement("code");
    code.className = "trace-id";
    code.textContent = trace;
    addRow(table, "trace", code);
    var url = cell(row, "url");
    if (url && /^https?:\/\//i.test(url)) {
      var link = document.createElement("a");
      link.setAttribute("href", url);
      link.setAttribute("target", "_blank");
      link.setAttribute("rel", "noopener noreferrer");
      link.textContent = "open trace";
      addRow(table, "", link);
    }
    tip.appendChild(table);
    // Only with --latency-record-content: the prompt and the answer, as text.
    [["prompt", "prompt"], ["content", "answer"]].forEach(function (pair) {
      var text = cell(row, pair[0]);
      if (text === null || text === undefined) return;
      var block = document.createElement("div");
      block.className = "tip-text";
      block.textContent = pair[1] + ": " + text;
      tip.appendChild(block);
    });
  }

  function place(event) {
    var x = event.clientX + 14, y = event.clientY + 14;
    var box = tip.getBoundingClientRect();
    if (x + box.width > window.innerWidth - 4) x = event.clientX - box.width - 14;
    if (y + box.height > window.innerHeight - 4) y = event.clientY - box.height - 14;
    tip.style.left = Math.max(4, x) + "px";
    tip.style.top = Math.max(4, y) + "px";
  }

  function keyed(target) {
    return target && target.closest ? target.closest("[data-k]") : null;
  }

  function show(event, element) {
    var row = data.rows[Number(element.getAttribute("data-k"))];
    if (!row) return;
    fillCard(row);
    tip.hidden = false;
    place(event);
  }

  document.addEventListener("mouseover", function (event) {
    var element = keyed(event.target);
    if (element && !pinned) show(event, element);
  });
  document.addEventListener("mousemove", function (event) {
    if (!pinned && !tip.hidden) place(event);
  });
  document.addEventListener("mouseout", function (event) {
    if (!pinned && keyed(event.target) && !keyed(event.relatedTarget)) tip.hidden = true;
  });
  document.addEventListener("click", function (event) {
    if (tip.contains(event.target)) return;
    var element = keyed(event.target);
    if (element && !dragged) {
      show(event, element);
      pinned = true;
      tip.classList.add("pinned");
    } else if (!element) {
      pinned = false;
      tip.classList.remove("pinned");
      tip.hidden = true;
    }
  });

  // ---- zoom along time ------------------------------------------------------------
  function niceTicks(lo, hi, wanted) {
    if (!(hi > lo)) return [lo];
    var raw = (hi - lo) / wanted;
    var magnitude = Math.pow(10, Math.floor(Math.log10(raw)));
    var step = [1, 2, 5, 10].map(function (m) { return m * magnitude; })
      .filter(function (s) { return s >= raw; })[0];
    var ticks = [];
    for (var v = Math.ceil(lo / step - 1e-9) * step; v <= hi + step * 1e-9 && ticks.length < 50;
      v += step) ticks.push(Math.abs(v) < step * 1e-9 ? 0 : v);
    return ticks;
  }

  function label(value) {
    if (value === 0) return "0";
    if (Math.abs(value) < 1) return +(value * 1e3).toPrecision(6) + "ms";
    return +value.toPrecision(6) + "s";
  }

  function make(tag, attributes, text) {
    var element = document.createElementNS(NS, tag);
    Object.keys(attributes).forEach(function (name) { element.setAttribute(name, attributes[name]); });
    if (text !== undefined) element.textContent = text;
    return element;
  }

  function Zoom(chart) {
    var axis = chart.querySelector("g.xt");
    var lo = parseFloat(axis.dataset.lo), hi = parseFloat(axis.dataset.hi);
    var bottom = parseFloat(axis.dataset.y), top = parseFloat(axis.dataset.top);
    var first = axis.querySelector("path.axis").getAttribute("d").match(/-?[\d.]+/g).map(Number);
    var x0 = first[0], x1 = first[2];
    var layers = chart.querySelectorAll("g.zl");
    var moving = chart.querySelectorAll(".zx");
    var domain = [lo, hi];
    var button = document.createElement("button");
    button.type = "button";
    button.className = "reset";
    button.textContent = "reset zoom";
    button.hidden = true;
    chart.parentNode.insertBefore(button, chart.nextSibling);

    function px(value) { return x0 + (value - lo) / (hi - lo) * (x1 - x0); }
    function at(pixel) { return domain[0] + (pixel - x0) / (x1 - x0) * (domain[1] - domain[0]); }

    function draw() {
      var k = (hi - lo) / (domain[1] - domain[0]);
      var shift = x0 - k * px(domain[0]);
      layers.forEach(function (layer) {
        layer.setAttribute("transform", "matrix(" + k + " 0 0 1 " + shift + " 0)");
      });
      moving.forEach(function (element) {
        var x = k * parseFloat(element.dataset.x) + shift;
        element.setAttribute("x", x);
        element.style.display = x < x0 - 1 || x > x1 ? "none" : "";
      });
      while (axis.firstChild) axis.removeChild(axis.firstChild);
      axis.appendChild(make("path", { d: "M" + x0 + " " + bottom + "L" + x1 + " " + bottom, "class": "axis" }));
      niceTicks(domain[0], domain[1], 7).forEach(function (tick) {
        var x = x0 + (tick - domain[0]) / (domain[1] - domain[0]) * (x1 - x0);
        axis.appendChild(make("path", { d: "M" + x + " " + top + "L" + x + " " + bottom, "class": "gl" }));
        axis.appendChild(make("text", { x: x, y: bottom + 14, "class": "tick", "text-anchor": "middle" }, label(tick)));
      });
      button.hidden = domain[0] === lo && domain[1] === hi;
    }

    function point(event) {
      var matrix = chart.getScreenCTM();
      if (!matrix) return null;
      var p = chart.createSVGPoint();
      p.x = event.clientX;
      p.y = event.clientY;
      return p.matrixTransform(matrix.inverse());
    }

    var start = null, brush = null;
    chart.addEventListener("mousedown", function (event) {
      var p = point(event);
      if (!p || p.x < x0 || p.x > x1 || p.y > bottom || event.button !== 0) return;
      start = p.x;
      dragged = false;
      brush = make("rect", { x: start, y: top, width: 0, height: bottom - top, "class": "brush" });
      chart.appendChild(brush);
      event.preventDefault();
    });
    window.addEventListener("mousemove", function (event) {
      if (start === null) return;
      var p = point(event);
      if (!p) return;
      var x = Math.min(Math.max(p.x, x0), x1);
      brush.setAttribute("x", Math.min(start, x));
      brush.setAttribute("width", Math.abs(x - start));
      if (Math.abs(x - start) > 4) dragged = true;
    });
    window.addEventListener("mouseup", function (event) {
      if (start === null) return;
      var p = point(event);
      var x = p ? Math.min(Math.max(p.x, x0), x1) : start;
      if (Math.abs(x - start) > 4) {
        domain = [at(Math.min(start, x)), at(Math.max(start, x))];
        draw();
      }
      brush.remove();
      start = brush = null;
      setTimeout(function () { dragged = false; }, 0);
    });
    function reset() { domain = [lo, hi]; draw(); }
    chart.addEventListener("dblclick", reset);
    button.addEventListener("click", reset);
    this.zoomTo = function (a, b) { domain = [a, b]; draw(); };
    this.domain = function () { return domain.slice(); };
  }

  window.latencyZoom = [];
  document.querySelectorAll("svg.zoomable").forEach(function (chart) {
    if (chart.querySelector("g.xt")) window.latencyZoom.push(new Zoom(chart));
  });
})();
