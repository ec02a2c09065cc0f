// Optional: hover read-out of time and value on the charts. The report is
// complete without it (the charts are inline SVG).
(function () {
  "use strict";
  var tip = document.getElementById("tip");
  function fmt(v, unit) {
    if (unit === "us") {
      if (v >= 1e6) return (v / 1e6).toFixed(2) + " s";
      if (v >= 1e3) return (v / 1e3).toFixed(2) + " ms";
      return v.toFixed(0) + " µs";
    }
    var s = v >= 100 ? v.toFixed(0) : v.toFixed(1);
    return unit ? s + " " + unit : s;
  }
  function num(el, name) { return parseFloat(el.getAttribute("data-" + name)); }
  var charts = document.querySelectorAll("svg.chart");
  Array.prototype.forEach.call(charts, function (svg) {
    var panels = svg.querySelectorAll("g.panel");
    svg.addEventListener("mousemove", function (ev) {
      var pt = svg.createSVGPoint();
      pt.x = ev.clientX; pt.y = ev.clientY;
      var ctm = svg.getScreenCTM();
      if (!ctm) return;
      var p = pt.matrixTransform(ctm.inverse());
      var hit = null;
      Array.prototype.forEach.call(panels, function (g) {
        if (p.x >= num(g, "px0") && p.x <= num(g, "px1") && p.y <= num(g, "py0") && p.y >= num(g, "py1")) hit = g;
      });
      if (!hit) { tip.style.display = "none"; return; }
      var t = num(hit, "x0") + (p.x - num(hit, "px0")) / (num(hit, "px1") - num(hit, "px0")) * (num(hit, "x1") - num(hit, "x0"));
      var f = (num(hit, "py0") - p.y) / (num(hit, "py0") - num(hit, "py1"));
      var y0 = num(hit, "y0"), y1 = num(hit, "y1"), v;
      if (hit.getAttribute("data-log") === "true") {
        v = Math.pow(10, Math.log10(y0) + f * (Math.log10(y1) - Math.log10(y0)));
      } else {
        v = y0 + f * (y1 - y0);
      }
      tip.textContent = "t = " + t.toFixed(2) + " s · " + fmt(v, hit.getAttribute("data-unit"));
      tip.style.left = (ev.clientX + 14) + "px";
      tip.style.top = (ev.clientY + 12) + "px";
      tip.style.display = "block";
    });
    svg.addEventListener("mouseleave", function () { tip.style.display = "none"; });
  });
  document.body.setAttribute("data-js", "ready");
})();
