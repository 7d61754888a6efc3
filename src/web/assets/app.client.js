/*
 * crewplane pages: the progressive enhancement (issue 25). Everything here is optional: every page
 * reads and every form posts without it. With it:
 *   - live regions: one event stream per page (the page's `data-stream`), read with fetch so that
 *     every event type arrives and the stream is closed the moment the page goes away; an event
 *     whose type starts with one of a region's `data-live` prefixes re-fetches that region (htmx);
 *   - countdowns (`data-countdown`) kept current against the server's clock (`data-now`);
 *   - bar charts (`data-chart="bars"`) and line plots (`data-chart="line"`, a null value is a gap)
 *     drawn with uPlot from the data the table beside them shows.
 * No eval, no inline script or style: the Content-Security-Policy allows neither.
 */
(function () {
  "use strict";

  var body = document.body;
  var serverOffsetMs = 0;
  if (body.dataset.now) {
    var serverNow = Date.parse(body.dataset.now);
    if (!isNaN(serverNow)) serverOffsetMs = serverNow - Date.now();
  }
  function now() {
    return Date.now() + serverOffsetMs;
  }

  // ---------------------------------------------------------------- live regions

  var refreshTimers = {};
  var deferred = {};
  var refreshes = 0;

  function matches(region, type) {
    var prefixes = (region.getAttribute("data-live") || "").split(/\s+/).filter(Boolean);
    if (prefixes.length === 0) return true;
    for (var i = 0; i < prefixes.length; i++) if (type.indexOf(prefixes[i]) === 0) return true;
    return false;
  }

  function refresh(id) {
    var region = document.getElementById(id);
    if (!region || !window.htmx) return;
    // Never pull a form out from under someone typing in it: wait until they leave the region.
    if (region.contains(document.activeElement) && document.activeElement !== document.body) {
      if (!deferred[id]) {
        deferred[id] = true;
        region.addEventListener(
          "focusout",
          function () {
            setTimeout(function () {
              deferred[id] = false;
              schedule(id);
            }, 0);
          },
          { once: true },
        );
      }
      return;
    }
    window.htmx
      .ajax("GET", location.pathname + location.search, { target: "#" + id, select: "#" + id, swap: "outerHTML" })
      .then(function () {
        refreshes += 1;
        body.setAttribute("data-live-refreshes", String(refreshes));
      });
  }

  /** At most one refresh per region per 250 ms: a burst of events becomes one fetch, a steady flow still refreshes. */
  function schedule(id) {
    if (refreshTimers[id]) return;
    refreshTimers[id] = setTimeout(function () {
      refreshTimers[id] = null;
      refresh(id);
    }, 250);
  }

  function onEvent(type) {
    var regions = document.querySelectorAll("[data-live][id]");
    for (var i = 0; i < regions.length; i++) if (matches(regions[i], type)) schedule(regions[i].id);
  }

  function setState(state) {
    body.setAttribute("data-live-state", state);
    var box = document.getElementById("live-state");
    if (box) {
      box.hidden = false;
      var label = box.querySelector("[data-live-state]");
      if (label) label.textContent = state === "open" ? "on" : state;
    }
  }

  /** Reads Server-Sent Events from a fetch body; calls back per complete frame. */
  function readFrames(reader, onFrame) {
    var decoder = new TextDecoder();
    var buffer = "";
    function pump() {
      return reader.read().then(function (chunk) {
        if (chunk.done) return;
        buffer += decoder.decode(chunk.value, { stream: true }).replace(/\r\n?/g, "\n");
        var end;
        while ((end = buffer.indexOf("\n\n")) !== -1) {
          var block = buffer.slice(0, end);
          buffer = buffer.slice(end + 2);
          var frame = { event: "message", data: "", id: null, retry: null };
          var lines = block.split("\n");
          var any = false;
          for (var i = 0; i < lines.length; i++) {
            var line = lines[i];
            if (line === "" || line.charAt(0) === ":") continue;
            var at = line.indexOf(":");
            var key = at === -1 ? line : line.slice(0, at);
            var value = at === -1 ? "" : line.slice(at + 1).replace(/^ /, "");
            any = true;
            if (key === "event") frame.event = value;
            else if (key === "data") frame.data = frame.data ? frame.data + "\n" + value : value;
            else if (key === "id") frame.id = value;
            else if (key === "retry") frame.retry = value;
          }
          if (any) onFrame(frame);
        }
        return pump();
      });
    }
    return pump();
  }

  function startStream(url) {
    var lastId = null;
    var retryMs = 2000;
    var controller = null;
    var stopped = false;

    // A page that goes away closes its stream at once, so the server frees it for the next page.
    window.addEventListener("pagehide", function () {
      stopped = true;
      if (controller) controller.abort();
    });
    // A page restored from the back/forward cache opens its stream again, from where it stopped.
    window.addEventListener("pageshow", function (e) {
      if (e.persisted && stopped) {
        stopped = false;
        connect();
      }
    });

    function connect() {
      if (stopped) return;
      controller = new AbortController();
      var headers = {};
      if (lastId) headers["Last-Event-ID"] = lastId;
      setState(lastId ? "reconnecting" : "connecting");
      fetch(url, { headers: headers, credentials: "same-origin", signal: controller.signal, cache: "no-store" })
        .then(function (res) {
          var type = res.headers.get("content-type") || "";
          if (res.status === 429) {
            // Too many streams open for this client (another tab, a reload still closing): wait and retry.
            var after = Number(res.headers.get("retry-after")) || 2;
            setState("waiting");
            res.body && res.body.cancel();
            return later(after * 1000);
          }
          if (!res.ok || type.indexOf("text/event-stream") !== 0) {
            setState(res.status === 401 ? "off (log in again)" : "off");
            stopped = true;
            res.body && res.body.cancel();
            return;
          }
          return readFrames(res.body.getReader(), function (frame) {
            if (frame.retry && /^\d+$/.test(frame.retry)) retryMs = Number(frame.retry);
            if (frame.id) lastId = frame.id;
            if (frame.event === "ready") {
              setState("open");
              return;
            }
            onEvent(frame.event);
          }).then(function () {
            return later(retryMs);
          });
        })
        .catch(function () {
          if (!stopped) return later(retryMs);
        });
    }

    function later(ms) {
      if (stopped) return;
      setState("reconnecting");
      setTimeout(connect, ms);
    }

    connect();
  }

  // ---------------------------------------------------------------- countdowns

  function relative(ms) {
    var abs = Math.abs(ms);
    var text =
      abs < 60000
        ? Math.round(abs / 1000) + " s"
        : abs < 3600000
          ? Math.round(abs / 60000) + " min"
          : abs < 172800000
            ? Math.round(abs / 3600000) + " h"
            : Math.round(abs / 86400000) + " days";
    return ms >= 0 ? "in " + text : text + " ago";
  }

  function tick() {
    var els = document.querySelectorAll("[data-countdown]");
    for (var i = 0; i < els.length; i++) {
      var at = Date.parse(els[i].getAttribute("data-countdown"));
      if (!isNaN(at)) els[i].textContent = relative(at - now());
    }
  }

  // ---------------------------------------------------------------- charts

  var palette = ["#1f5fa8", "#b35c00", "#2e7d32", "#6a1b9a"];

  function drawBars(el) {
    if (!window.uPlot || el.getAttribute("data-drawn") === "true") return;
    var line = el.getAttribute("data-chart") === "line";
    var spec;
    try {
      spec = JSON.parse(el.getAttribute("data-chart-data") || "{}");
    } catch (e) {
      return;
    }
    var labels = spec.labels || [];
    var series = spec.series || [];
    if (labels.length === 0 || series.length === 0) return;
    var xs = labels.map(function (_, i) {
      return i;
    });
    var n = series.length;
    var data = [xs].concat(
      series.map(function (s) {
        return s.values.map(function (v) {
          return typeof v === "number" ? v : null;
        });
      }),
    );
    var max = 0;
    for (var i = 1; i < data.length; i++)
      for (var j = 0; j < data[i].length; j++) if (data[i][j] !== null && data[i][j] > max) max = data[i][j];
    var bars = window.uPlot.paths && window.uPlot.paths.bars;
    var opts = {
      width: Math.max(240, el.clientWidth || 320),
      height: 220,
      legend: { show: true, live: false },
      cursor: { show: false },
      scales: { x: { time: false, range: [-0.5, labels.length - 0.5] }, y: { range: [0, Math.max(1, max)] } },
      axes: [
        {
          values: function (u, splits) {
            return splits.map(function (s) {
              return Number.isInteger(s) && labels[s] !== undefined ? String(labels[s]).slice(0, 24) : "";
            });
          },
          splits: function () {
            return xs;
          },
        },
        {},
      ],
      series: [{ label: spec.unit || "" }].concat(
        series.map(function (s, k) {
          return {
            label: s.label,
            stroke: palette[k % palette.length],
            fill: line ? undefined : palette[k % palette.length],
            width: line ? 2 : 1,
            points: { show: line },
            spanGaps: false,
            paths: line ? undefined : bars ? bars({ size: [0.8 / n, 80], align: n === 1 ? 0 : k === 0 ? -1 : 1 }) : undefined,
          };
        }),
      ),
    };
    el.textContent = "";
    var plot = new window.uPlot(opts, data, el);
    el.setAttribute("data-drawn", "true");
    // The chart follows its box (a narrower window, a zoom): the box never grows to fit the chart.
    var fit = function () {
      var width = Math.max(240, el.clientWidth || 320);
      if (width !== plot.width) plot.setSize({ width: width, height: 220 });
    };
    if (window.ResizeObserver) new window.ResizeObserver(fit).observe(el);
    else window.addEventListener("resize", fit);
  }

  function drawCharts(root) {
    var els = (root || document).querySelectorAll('[data-chart="bars"], [data-chart="line"]');
    for (var i = 0; i < els.length; i++) drawBars(els[i]);
  }

  // ---------------------------------------------------------------- confirmations

  // A form with data-confirm (retiring an employee) asks first; nothing is sent on "Cancel".
  document.addEventListener(
    "submit",
    function (e) {
      var form = e.target;
      var question = form && form.getAttribute && form.getAttribute("data-confirm");
      if (question && !window.confirm(question)) e.preventDefault();
    },
    true,
  );

  // ---------------------------------------------------------------- start

  document.addEventListener("htmx:afterSettle", function (e) {
    drawCharts(e.target && e.target.querySelectorAll ? e.target : document);
    tick();
  });

  function start() {
    tick();
    setInterval(tick, 1000);
    drawCharts(document);
    var url = body.getAttribute("data-stream");
    if (url && window.fetch && window.ReadableStream && window.AbortController) startStream(url);
  }

  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", start);
  else start();
})();
