(function () {
  "use strict";
  // Everything from the session is put into the page as text (textContent), never as markup.
  var data = JSON.parse(document.getElementById("pi-data").textContent);
  var PREVIEW_LINES = 12;
  var CHUNK = 150;
  var calls = data.calls;
  var cards = new Array(calls.length);

  function el(tag, cls, text) {
    var e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text !== undefined && text !== null) e.textContent = String(text);
    return e;
  }
  function ms(v) {
    if (v === null || v === undefined) return "";
    if (v < 1000) return Math.round(v) + " ms";
    if (v < 60000) return (v / 1000).toFixed(2) + " s";
    var m = Math.floor(v / 60000);
    return m + " min " + Math.round((v % 60000) / 1000) + " s";
  }
  function duration(c) {
    if (c.start !== null && c.end !== null) return c.end - c.start;
    if (c.durationMs !== undefined) return c.durationMs;
    return null;
  }
  // A long text shows its first lines; the rest is built only when the button is clicked.
  function folded(text, cls) {
    var box = el("div", "fold");
    var lines = text.split("\n");
    var pre = el("pre", cls);
    if (lines.length <= PREVIEW_LINES) {
      pre.textContent = text;
      box.appendChild(pre);
      return box;
    }
    pre.textContent = lines.slice(0, PREVIEW_LINES).join("\n");
    box.appendChild(pre);
    var more = lines.length - PREVIEW_LINES;
    var button = el("button", "unfold", "show all " + lines.length + " lines (" + more + " more)");
    button.type = "button";
    button.addEventListener("click", function () {
      if (button.dataset.open === "1") {
        pre.textContent = lines.slice(0, PREVIEW_LINES).join("\n");
        button.textContent = "show all " + lines.length + " lines (" + more + " more)";
        button.dataset.open = "0";
      } else {
        pre.textContent = text;
        button.textContent = "fold";
        button.dataset.open = "1";
      }
    });
    box.appendChild(button);
    return box;
  }
  function diffView(text) {
    var pre = el("pre", "diff");
    var lines = text.split("\n");
    var shown = Math.min(lines.length, 400);
    function fill(n) {
      pre.textContent = "";
      for (var i = 0; i < n; i++) {
        var line = lines[i];
        var c = line.charAt(0) === "+" ? "add" : line.charAt(0) === "-" ? "del" : "ctx";
        pre.appendChild(el("span", c, line));
      }
    }
    fill(shown);
    var box = el("div", "fold");
    box.appendChild(pre);
    if (shown < lines.length) {
      var button = el("button", "unfold", "show all " + lines.length + " lines");
      button.type = "button";
      button.addEventListener("click", function () { fill(lines.length); button.remove(); });
      box.appendChild(button);
    }
    return box;
  }
  function status(c) {
    return c.blocked ? "blocked" : c.error ? "error" : c.status;
  }
  function callCard(c) {
    var st = status(c);
    var card = el("div", "call" + (c.blocked ? " blocked" : c.error ? " error" : ""));
    card.dataset.i = String(c.i);
    card.dataset.tool = c.tool;
    var head = el("div", "chead");
    head.appendChild(el("span", "tool", c.tool));
    head.appendChild(el("span", "cid", c.id));
    head.appendChild(el("span", "badge " + st, st));
    var d = duration(c);
    if (d !== null) head.appendChild(el("span", "dur", ms(d)));
    card.appendChild(head);
    if (c.args) {
      card.appendChild(el("div", "section-label", "arguments"));
      card.appendChild(folded(c.args, "args"));
    }
    for (var a = 0; a < c.audit.length; a++) {
      var dec = c.audit[a];
      var line = el("div", "audit " + (dec.decision || ""));
      var parts = ["policy", dec.phase, dec.decision];
      if (dec.source) parts.push("by " + dec.source);
      line.textContent = parts.filter(Boolean).join(" · ") + (dec.reason ? " — " + dec.reason : "");
      card.appendChild(line);
      if (dec.detail) card.appendChild(folded(dec.detail, "detail"));
      if (dec.approval) card.appendChild(folded("approval " + dec.approval, "detail"));
    }
    if (c.status !== "no result" || c.text) {
      card.appendChild(el("div", "section-label", c.error ? "error" : "result"));
      if (c.truncated) {
        card.appendChild(el("div", "trunc", "output truncated" +
          (c.fullOutputPath ? " — full output: " + c.fullOutputPath : "")));
      }
      if (c.diff) card.appendChild(diffView(c.diff));
      if (c.text) card.appendChild(folded(c.text, "output"));
      for (var m = 0; m < c.images.length; m++) {
        var img = el("img", "result");
        img.alt = "image " + (m + 1) + " of the result";
        img.src = "data:" + c.images[m].mime + ";base64," + c.images[m].data;
        card.appendChild(img);
      }
      if (c.badImages) card.appendChild(el("div", "trunc", c.badImages + " image(s) not shown: not a valid image"));
    }
    if (c.children.length) {
      var kids = el("div", "children");
      kids.appendChild(el("div", "section-label", "nested calls (" + c.children.length + ")"));
      for (var k = 0; k < c.children.length; k++) kids.appendChild(callCard(calls[c.children[k]]));
      card.appendChild(kids);
    }
    cards[c.i] = card;
    return card;
  }
  function timeline(b) {
    var box = el("div", "timeline");
    var lanes = [];
    function add(i, depth) {
      lanes.push({ c: calls[i], depth: depth });
      var ch = calls[i].children;
      for (var k = 0; k < ch.length; k++) if (calls[ch[k]].start !== null) add(ch[k], depth + 1);
    }
    for (var j = 0; j < b.calls.length; j++) add(b.calls[j], 0);
    var t0 = b.start, t1 = t0;
    var slowest = -1, slow = -1;
    lanes.forEach(function (l, n) {
      var c = l.c;
      if (c.end !== null && t0 !== null) t1 = Math.max(t1, c.end);
      var d = c.end !== null && t0 !== null ? c.end - (c.start !== null ? c.start : t0) : null;
      if (d !== null && d > slow) { slow = d; slowest = n; }
    });
    var span = t1 !== null && t0 !== null ? Math.max(t1 - t0, 1) : 1;
    lanes.forEach(function (l, n) {
      var c = l.c;
      var lane = el("div", "lane" + (l.depth ? " nested" : "") + (n === slowest ? " slowest" : ""));
      lane.dataset.i = String(c.i);
      lane.appendChild(el("span", "label", c.tool + " " + c.id));
      var track = el("div", "track");
      var bar = el("div", "bar" + (c.start === null ? " est" : "") +
        (c.blocked ? " blocked" : c.error ? " error" : ""));
      var start = c.start !== null ? c.start : t0;
      var end = c.end !== null ? c.end : start;
      var d = null;
      if (t0 !== null && start !== null) {
        bar.style.left = ((start - t0) / span * 100).toFixed(3) + "%";
        bar.style.width = (Math.max(end - start, 0) / span * 100).toFixed(3) + "%";
        d = end - start;
      }
      bar.title = c.start === null
        ? "the session file records when the call ended, not when it started"
        : "started " + ms(c.start - t0) + " into the batch";
      track.appendChild(bar);
      lane.appendChild(track);
      lane.appendChild(el("span", "dur", d === null ? "" : ms(d)));
      box.appendChild(lane);
    });
    return box;
  }
  function batchView(item) {
    var b = data.batches[item.b];
    var sec = el("section", "batch");
    sec.dataset.b = String(item.b);
    var n = b.calls.length;
    sec.appendChild(el("div", "bhead", "batch " + (item.b + 1) + " · " + n + (n === 1 ? " call" : " calls") +
      (b.timed ? "" : " · timed from the result timestamps")));
    sec.appendChild(timeline(b));
    for (var j = 0; j < n; j++) sec.appendChild(callCard(calls[b.calls[j]]));
    return sec;
  }
  function itemView(item) {
    if (item.k === "batch") return batchView(item);
    if (item.k === "orphan") return callCard(calls[item.c]);
    if (item.k === "thinking") {
      var det = el("details", "thinking");
      det.appendChild(el("summary", null, "thinking"));
      det.appendChild(el("pre", null, item.text));
      return det;
    }
    var box = el("div", "msg " + item.k);
    box.appendChild(el("div", "who", item.k));
    box.appendChild(folded(item.text, "text"));
    var images = item.images || [];
    for (var m = 0; m < images.length; m++) {
      var img = el("img", "result");
      img.alt = "image " + (m + 1);
      img.src = "data:" + images[m].mime + ";base64," + images[m].data;
      box.appendChild(img);
    }
    return box;
  }

  // header: title, summary, filter
  document.title = data.title + " · pi session report";
  var header = el("header");
  header.appendChild(el("h1", null, data.title));
  var meta = [data.format];
  if (data.model) meta.push("model " + data.model);
  if (data.cwd) meta.push("cwd " + data.cwd);
  header.appendChild(el("div", "meta", meta.join(" · ")));
  var s = data.summary;
  var sum = el("div", "summary");
  sum.id = "summary";
  [["turns", s.turns], ["calls", s.calls], ["errors", s.errors], ["blocked", s.blocked],
   ["wall time", ms(s.wallMs)]].forEach(function (p) {
    var cell = el("span", "stat");
    cell.dataset.stat = p[0];
    cell.appendChild(el("span", "n", p[1]));
    cell.appendChild(document.createTextNode(" " + p[0]));
    sum.appendChild(cell);
  });
  var toolNames = Object.keys(s.tools);
  sum.appendChild(el("span", "tools", toolNames.map(function (t) { return t + " " + s.tools[t]; }).join(", ")));
  header.appendChild(sum);
  var filters = el("div", "filters");
  var select = el("select");
  select.id = "filter-tool";
  select.setAttribute("aria-label", "tool");
  var all = el("option", null, "all tools");
  all.value = "";
  select.appendChild(all);
  toolNames.forEach(function (t) { var o = el("option", null, t); o.value = t; select.appendChild(o); });
  var errorsOnly = el("input");
  errorsOnly.type = "checkbox";
  errorsOnly.id = "filter-errors";
  var errLabel = el("label");
  errLabel.appendChild(errorsOnly);
  errLabel.appendChild(document.createTextNode(" errors and blocked only"));
  var text = el("input");
  text.type = "search";
  text.id = "filter-text";
  text.placeholder = "filter calls by text";
  var shown = el("span", "meta");
  shown.id = "filter-count";
  filters.appendChild(select);
  filters.appendChild(errLabel);
  filters.appendChild(text);
  filters.appendChild(shown);
  header.appendChild(filters);
  document.body.appendChild(header);
  var main = el("main");
  document.body.appendChild(main);

  // The conversation is cut into pages of PAGE items; a page is an empty placeholder of an
  // estimated height until it comes near the screen, then it is built (and stays built).
  var PAGE = 40;
  var pages = [];
  function estimate(item) {
    function lines(t, cap) { var n = 1, i = -1; while (n < cap && (i = t.indexOf("\n", i + 1)) >= 0) n++; return n; }
    if (item.k === "batch") {
      var b = data.batches[item.b], h = 40;
      for (var j = 0; j < b.calls.length; j++) {
        var c = calls[b.calls[j]];
        h += 18 + 70 + 17 * (lines(c.args, PREVIEW_LINES) + lines(c.text, PREVIEW_LINES)) + (c.diff ? 17 * lines(c.diff, 400) : 0);
      }
      return h;
    }
    if (item.k === "orphan") return 120;
    if (item.k === "thinking") return 24;
    return 50 + 17 * lines(item.text, PREVIEW_LINES);
  }
  var haystack = new Array(calls.length);
  var filter = { active: false, keep: null };
  function pageMatches(p) {
    if (!filter.active) return true;
    for (var n = p.from; n < p.to; n++) {
      var it = data.items[n];
      if (it.k === "batch") { if (data.batches[it.b].calls.some(function (i) { return filter.keep[i]; })) return true; }
      else if (it.k === "orphan" && filter.keep[it.c]) return true;
    }
    return false;
  }
  function applyToBuilt() {
    for (var j = 0; j < calls.length; j++) if (cards[j]) cards[j].classList.toggle("hidden", filter.active && !filter.keep[j]);
    main.querySelectorAll("section.batch").forEach(function (sec) {
      var b = data.batches[Number(sec.dataset.b)];
      sec.classList.toggle("hidden", filter.active && !b.calls.some(function (i) { return filter.keep[i]; }));
    });
    pages.forEach(function (p) { p.el.classList.toggle("hidden", !pageMatches(p)); });
  }
  function buildPage(p) {
    if (p.built) return;
    p.built = true;
    var frag = document.createDocumentFragment();
    for (var n = p.from; n < p.to; n++) frag.appendChild(itemView(data.items[n]));
    p.el.appendChild(frag);
    p.el.style.minHeight = "";
    p.el.classList.add("built");
    observer.unobserve(p.el);
    if (filter.active) applyToBuilt();
  }
  function applyFilter() {
    var tool = select.value, errs = errorsOnly.checked, q = text.value.toLowerCase();
    var active = tool !== "" || errs || q !== "";
    var count = 0;
    function match(c) {
      if (tool && c.tool !== tool) return false;
      if (errs && !(c.error || c.blocked)) return false;
      if (q) {
        if (haystack[c.i] === undefined) haystack[c.i] = (c.tool + "\n" + c.args + "\n" + c.text).toLowerCase();
        if (haystack[c.i].indexOf(q) < 0) return false;
      }
      return true;
    }
    // a nested call that matches keeps its ancestors visible
    var keep = new Uint8Array(calls.length);
    for (var i = 0; i < calls.length; i++) {
      if (match(calls[i])) {
        count++;
        for (var p = i; p !== null && !keep[p]; p = calls[p].parent) keep[p] = 1;
      }
    }
    filter.active = active;
    filter.keep = keep;
    main.classList.toggle("filtering", active);
    applyToBuilt();
    shown.textContent = active ? count + " of " + calls.length + " calls" : calls.length + " calls";
  }
  select.addEventListener("change", applyFilter);
  errorsOnly.addEventListener("change", applyFilter);
  text.addEventListener("input", applyFilter);

  var observer = new IntersectionObserver(function (entries) {
    entries.forEach(function (e) { if (e.isIntersecting) buildPage(pages[Number(e.target.dataset.page)]); });
  }, { rootMargin: "1500px 0px" });
  var frag = document.createDocumentFragment();
  for (var from = 0; from < data.items.length; from += PAGE) {
    var to = Math.min(from + PAGE, data.items.length);
    var h = 0;
    for (var n = from; n < to; n++) h += estimate(data.items[n]);
    var el0 = el("div", "page");
    el0.dataset.page = String(pages.length);
    el0.style.minHeight = h + "px";
    pages.push({ from: from, to: to, el: el0, built: false });
    frag.appendChild(el0);
  }
  main.appendChild(frag);
  shown.textContent = calls.length + " calls";
  if (pages.length) buildPage(pages[0]);
  pages.forEach(function (p) { observer.observe(p.el); });
  // ready once the first screen is there (the observer has answered for every page once)
  requestAnimationFrame(function () {
    setTimeout(function () {
      document.body.dataset.ready = "1";
      document.body.dataset.readyMs = String(Math.round(performance.now()));
    }, 0);
  });
})();
