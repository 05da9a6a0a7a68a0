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

  function scrollToBreak() {
    var line = document.querySelector("g.breaking line");
    if (!line || !scroll) return;
    var x = parseFloat(line.getAttribute("x1"));
    scroll.scrollLeft = Math.max(0, x - scroll.clientWidth * 0.75);
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

  show(location.hash === "#axis=time" ? "time" : "step");
})();
