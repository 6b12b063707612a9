// agentgauge viewer: draws the run page's plots and sizes the trajectory timeline.
// Served from this server only (the page's Content-Security-Policy allows no inline script).
"use strict";

function drawPlots() {
  if (typeof Plotly === "undefined") return;
  for (const node of document.querySelectorAll("script.plot-data")) {
    const target = document.getElementById(node.dataset.target);
    if (!target) continue;
    const fig = JSON.parse(node.textContent);
    Plotly.newPlot(target, fig.data, fig.layout, { responsive: true, displaylogo: false });
  }
}

// Each step's width is its share of the measure; a step with no recorded value keeps
// the smallest width and is hatched, so an unknown is never drawn as a zero.
function sizeTimeline(measure) {
  const steps = document.querySelectorAll("#timeline .step");
  let known = [];
  for (const step of steps) {
    const raw = step.dataset[measure];
    const value = raw === "" || raw === undefined ? NaN : Number(raw);
    if (Number.isFinite(value) && value >= 0) known.push(value);
  }
  const total = known.reduce((a, b) => a + b, 0);
  for (const step of steps) {
    const raw = step.dataset[measure];
    const value = raw === "" || raw === undefined ? NaN : Number(raw);
    const ok = Number.isFinite(value) && value >= 0;
    step.classList.toggle("unknown", !ok);
    const grow = ok && total > 0 ? (1000 * value) / total : 0;
    step.style.flex = `${grow} 1 0`;
  }
}

function wireTimeline() {
  const radios = document.querySelectorAll('input[name="measure"]');
  for (const radio of radios) {
    radio.addEventListener("change", () => sizeTimeline(radio.value));
  }
  if (document.getElementById("timeline")) sizeTimeline("duration");
}

document.addEventListener("DOMContentLoaded", () => {
  drawPlots();
  wireTimeline();
});
