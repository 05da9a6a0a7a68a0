// Switch the x axis between the step order and virtual time, size the box
// labels, show a box's details, copy the replay command.
(function () {
  "use strict";
  var info = document.getElementById("info");
  var scroll = document.getElementById("scroll");

  function setAttrs(el, spec) {
    spec.split(";").forEach(function (kv) {
      var i = kv.indexOf("=");
      if (i > 0) el.setAttribute(kv.slice(0, i), kv.slice(i + 1));
    });
  }

  function fitLabels() {
    document.querySelectorAll("g.span").forEach(function (g) {
      var rect = g.querySelector("rect"), text = g.querySelector("text");
      var width = parseFloat(rect.getAttribute("width"));
      text.style.display = text.textContent.length * 6.2 + 6 <= width ? "" : "none";
    });
  }

  // The chart opens at its first step; only when the breaking step would
  // be out of view does it open scrolled to show it.
  function scrollToBreak() {
    var line = document.querySelector("g.breaking line");
    if (!scroll) return;
    var x = line ? parseFloat(line.getAttribute("x1")) : 0;
    scroll.scrollLeft = x + 60 > scroll.clientWidth ? x - scroll.clientWidth * 0.75 : 0;
  }

  function show(axis) {
    document.querySelectorAll("[data-" + axis + "]").forEach(function (el) {
      setAttrs(el, el.getAttribute("data-" + axis));
    });
    document.querySelectorAll("g.axis").forEach(function (g) {
      g.style.display = g.classList.contains(axis) ? "" : "none";
    });
    document.querySelectorAll("button[data-axis]").forEach(function (b) {
      b.classList.toggle("on", b.getAttribute("data-axis") === axis);
    });
    fitLabels();
    scrollToBreak();
    document.body.setAttribute("data-rendered", axis);
  }

  document.querySelectorAll("button[data-axis]").forEach(function (b) {
    b.addEventListener("click", function () {
      var axis = b.getAttribute("data-axis");
      show(axis);
      history.replaceState(null, "", "#axis=" + axis);
    });
  });

  var kept = info.textContent;
  document.querySelectorAll("[data-info]").forEach(function (g) {
    g.addEventListener("mouseenter", function () { info.textContent = g.getAttribute("data-info"); });
    g.addEventListener("mouseleave", function () { info.textContent = kept; });
    g.addEventListener("click", function () {
      document.querySelectorAll("g.picked").forEach(function (p) { p.classList.remove("picked"); });
      g.classList.add("picked");
      kept = g.getAttribute("data-info");
      info.textContent = kept;
    });
  });

  var copy = document.getElementById("copy");
  if (copy) {
    copy.addEventListener("click", function () {
      var text = document.getElementById("replay").textContent;
      if (navigator.clipboard) navigator.clipboard.writeText(text);
      copy.textContent = "copied";
    });
  }

  // The page checks its own layout (the screenshot test asks with
  // #layout): labels drawn over a box or a label they do not belong to,
  // and words of the facts broken over two lines.
  function layoutCheck() {
    function box(el) { return el.getBoundingClientRect(); }
    function meets(a, b) {
      return a.left < b.right - 0.5 && b.left < a.right - 0.5 &&
        a.top < b.bottom - 0.5 && b.top < a.bottom - 0.5;
    }
    var shown = function (el) { return el.style.display !== "none" && box(el).width > 0; };
    var labels = Array.prototype.filter.call(
      document.querySelectorAll("svg.plot text.mark-label, g.breaking text, g.span text"), shown);
    var boxes = Array.prototype.slice.call(document.querySelectorAll("g.span rect"));
    var overlaps = [];
    labels.forEach(function (t, i) {
      var own = t.parentNode.classList.contains("span") ? t.parentNode.querySelector("rect") : null;
      boxes.forEach(function (r) {
        if (r !== own && meets(box(t), box(r))) overlaps.push(t.textContent + " / box");
      });
      labels.slice(i + 1).forEach(function (u) {
        if (meets(box(t), box(u))) overlaps.push(t.textContent + " / " + u.textContent);
      });
    });
    var broken = Array.prototype.filter.call(
      document.querySelectorAll(".facts code.token, .facts .word"),
      function (w) { return w.getClientRects().length > 1; });
    // Every lane shows a step, a box or why it has none.
    var plot = document.getElementById("lanes");
    var blank = Array.prototype.filter.call(plot.querySelectorAll("rect.lane"), function (lane) {
      var top = box(lane).top, bottom = box(lane).bottom;
      var inside = function (el) { var b = box(el); return b.top >= top - 0.5 && b.bottom <= bottom + 0.5; };
      return !Array.prototype.some.call(
        plot.querySelectorAll("rect.run, g.span rect, text.never-ran"), inside);
    });
    // No stretch of one counter line lies on another's.
    function flats(poly) {
      var pts = poly.getAttribute("points").trim().split(/\s+/).map(function (p) {
        return p.split(",").map(parseFloat);
      });
      var out = [];
      for (var i = 1; i < pts.length; i++) {
        if (pts[i][1] === pts[i - 1][1] && pts[i][0] > pts[i - 1][0]) out.push([pts[i - 1][0], pts[i][0], pts[i][1]]);
      }
      return out;
    }
    var lines = Array.prototype.map.call(plot.querySelectorAll("polyline.series"), flats);
    var hidden = 0;
    lines.forEach(function (a, i) {
      lines.slice(i + 1).forEach(function (b) {
        a.forEach(function (s) {
          b.forEach(function (t) {
            if (Math.abs(s[2] - t[2]) < 1 && Math.min(s[1], t[1]) - Math.max(s[0], t[0]) > 1) hidden++;
          });
        });
      });
    });
    document.body.setAttribute("data-blank-lanes", blank.length);
    document.body.setAttribute("data-hidden-lines", hidden);
    document.body.setAttribute("data-scrolled", scroll ? Math.round(scroll.scrollLeft) : 0);
    document.body.setAttribute("data-overlaps", overlaps.length);
    document.body.setAttribute("data-overlap-list", overlaps.join("; "));
    document.body.setAttribute("data-broken-words", broken.length);
  }

  show(location.hash === "#axis=time" ? "time" : "step");
  if (location.hash.indexOf("layout") >= 0) layoutCheck();
})();
