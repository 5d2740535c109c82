// kshim trace analyze: the interactive report (vanilla JS, no network). Reads the JSON blob in
// <script id="kshim-data">, draws per group a member-lane timeline and a partition view on canvases
// (wheel zoom, drag pan, double-click or "reset" to reset), shows a mark's decoded frames on click,
// and filters lanes, partition owners and table rows by the member filter. See viewer.py for the blob.
"use strict";
(function () {
  const D = JSON.parse(document.getElementById("kshim-data").textContent);
  const errors = [];
  const LEFT = 230, RIGHT = 12, AXIS = 26, STRIP = 34;
  const KIND_COLOUR = {joined: "#36c", first_seen: "#36c", rejoined: "#36c", left: "#d33", removed: "#d33",
    session_timeout: "#d33", poll_interval_exceeded: "#d33", poll_timeout: "#d33", sync_timeout: "#d33",
    rebalance_timeout: "#d33", fenced: "#a0a", static_rejoin: "#e90", static_replaced: "#e90",
    skip_assignment: "#888", error: "#b60", epoch: "#999", assignment: "#999", status: "#999"};
  let filter = "";
  const tip = document.getElementById("tip");

  const esc = s => String(s == null ? "" : s).replace(/[&<>"]/g, c => ({"&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;"})[c]);
  const clock = ms => new Date(ms).toISOString().slice(11, 23);
  const matches = text => !filter || String(text || "").toLowerCase().includes(filter);
  const GAP_COLOUR = ["#d22", "#ccc", "#c9d3e6"];   // by gap kind: no owner, not assigned yet, owner unknown
  function fit(ctx, text, w) {
    if (ctx.measureText(text).width <= w) return text;
    let s = text;
    while (s.length > 1 && ctx.measureText(s + "…").width > w) s = s.slice(0, -1);
    return s + "…";
  }
  function showTip(ev, html) {
    if (!html) { tip.style.display = "none"; return; }
    tip.innerHTML = html; tip.style.display = "block";
    tip.style.left = Math.min(ev.pageX + 14, document.documentElement.scrollWidth - 420) + "px";
    tip.style.top = (ev.pageY + 14) + "px";
  }
  function setupCanvas(canvas, w, h) {
    const r = window.devicePixelRatio || 1;
    canvas.width = Math.round(w * r); canvas.height = Math.round(h * r);
    canvas.style.width = w + "px"; canvas.style.height = h + "px";
    const ctx = canvas.getContext("2d"); ctx.setTransform(r, 0, 0, r, 0, 0);
    return ctx;
  }
  function framesHtml(keys) {
    const out = [];
    for (const k of keys || []) {
      const fs = D.frames[k];
      if (!fs) { out.push("<p class='muted'>frame " + esc(k) + " not embedded (size cap; see the note at the top)</p>"); continue; }
      for (const f of fs) {
        out.push("<details open><summary>" + esc(f.dir) + " " + esc(f.api) + " v" + esc(f.v) + " #" + esc(f.corr)
          + " conn " + esc(f.conn) + " at " + clock(f.wall_ms) + (f.errors ? " errors " + esc(f.errors) : "")
          + "</summary><pre>" + esc(JSON.stringify(f.body, null, 1)) + "</pre></details>");
      }
    }
    return out.join("");
  }

  function Group(g, root) {
    const self = this;
    this.lh = g.lanes.length > 80 ? 10 : 16;      // lane height: many identities, thinner lanes
    this.extent = g.lanes.map(() => [Infinity, -Infinity]);   // when each lane has something to draw
    for (const s of g.segs) { const e = this.extent[s[0]]; e[0] = Math.min(e[0], s[1]); e[1] = Math.max(e[1], s[2]); }
    for (const m of g.marks) { const e = this.extent[m[0]]; e[0] = Math.min(e[0], m[1]); e[1] = Math.max(e[1], m[1]); }
    this.g = g; this.pad = Math.max(g.span, 1) * 0.015; this.a = -this.pad; this.b = g.span + this.pad;
    root.innerHTML = "<div class='bar'><button class='reset'>reset zoom</button> <span class='range'></span>"
      + " <span class='muted'>wheel: zoom, drag: pan, click a mark: its frames</span></div>"
      + "<canvas class='lanes'></canvas><div class='part'></div><div class='detail'></div>";
    this.range = root.querySelector(".range");
    this.detail = root.querySelector(".detail");
    this.lanesCanvas = root.querySelector("canvas.lanes");
    this.width = Math.max(root.clientWidth, 600);
    root.querySelector(".reset").onclick = () => self.reset();
    this.hits = [];
    this.parts = g.parts ? new Partitions(this, root.querySelector(".part")) : null;
    this.interact(this.lanesCanvas, () => this.hits);
    this.draw();
  }
  Group.prototype.reset = function () { this.a = -this.pad; this.b = this.g.span + this.pad; this.draw(); };
  Group.prototype.x = function (t) { return LEFT + (t - this.a) * (this.width - LEFT - RIGHT) / (this.b - this.a); };
  Group.prototype.t = function (x) { return this.a + (x - LEFT) * (this.b - this.a) / (this.width - LEFT - RIGHT); };
  Group.prototype.interact = function (canvas, hitsOf) {
    const self = this;
    let drag = null;
    canvas.addEventListener("wheel", ev => {
      ev.preventDefault();
      const x = ev.offsetX; if (x < LEFT) return;
      const t = self.t(x), k = Math.exp(ev.deltaY * 0.0015);
      const w = Math.max((self.b - self.a) * k, 5);
      self.a = t - (t - self.a) * w / (self.b - self.a); self.b = self.a + w; self.draw();
    }, {passive: false});
    canvas.addEventListener("mousedown", ev => { drag = {x: ev.offsetX, a: self.a, b: self.b, moved: false}; });
    window.addEventListener("mouseup", () => { setTimeout(() => { drag = null; }, 0); });
    canvas.addEventListener("mousemove", ev => {
      if (drag && (ev.buttons & 1)) {
        const dt = (ev.offsetX - drag.x) * (drag.b - drag.a) / (self.width - LEFT - RIGHT);
        if (Math.abs(ev.offsetX - drag.x) > 2) drag.moved = true;
        self.a = drag.a - dt; self.b = drag.b - dt; self.draw(); return;
      }
      const h = hit(hitsOf(), ev.offsetX, ev.offsetY);
      canvas.style.cursor = h ? "pointer" : "default";
      showTip(ev, h && (h.tipAt ? h.tipAt(ev.offsetX) : h.tip));
    });
    canvas.addEventListener("mouseleave", () => showTip(null, null));
    canvas.addEventListener("dblclick", () => self.reset());
    canvas.addEventListener("click", ev => {
      if (drag && drag.moved) return;
      const h = hit(hitsOf(), ev.offsetX, ev.offsetY);
      if (h && h.click) h.click(); else if (h) self.show(h.tip, h.frames, h.cause);
    });
  };
  function hit(hits, x, y) {
    let best = null, bd = 1e9;
    for (const h of hits) {
      if (h.r) {          // a mark: nearest within its radius
        const d = Math.hypot(h.x - x, h.y - y);
        if (d <= h.r + 3 && d < bd) { best = h; bd = d; }
      } else if (!best && x >= h.x && x <= h.x + h.w && y >= h.y && y <= h.y + h.h) best = h;
    }
    return best;
  }
  Group.prototype.show = function (html, frames, causeId) {
    let out = "<button class='close'>close</button>" + html;
    const chain = causeId && this.g.causes[causeId];
    if (chain) {
      out += "<h4>cause chain " + esc(causeId) + "</h4><ol>";
      for (const c of chain) out += "<li>" + clock(this.g.t0 + c.t) + " <b>" + esc(c.kind) + "</b> " + esc(c.member || "")
        + " " + esc(c.text || "") + "</li>";
      out += "</ol>";
      frames = (frames || []).concat(chain.map(c => c.frame).filter(Boolean));
    }
    out += framesHtml(frames);
    this.detail.innerHTML = out; this.detail.style.display = "block";
    this.detail.querySelector(".close").onclick = () => { this.detail.style.display = "none"; };
  };
  Group.prototype.axis = function (ctx, h) {
    ctx.fillStyle = "#666"; ctx.font = "10px sans-serif"; ctx.strokeStyle = "#e4e4e4";
    const span = this.b - this.a, px = this.width - LEFT - RIGHT;
    let step = 1; for (const s of [1, 2, 5, 10, 20, 50, 100, 200, 500, 1e3, 2e3, 5e3, 1e4, 2e4, 3e4, 6e4, 12e4, 3e5, 6e5, 18e5, 36e5])
      { step = s; if (px * s / span >= 90) break; }
    for (let t = Math.ceil(this.a / step) * step; t <= this.b; t += step) {
      const x = this.x(t);
      ctx.beginPath(); ctx.moveTo(x, AXIS - 4); ctx.lineTo(x, h); ctx.stroke();
      ctx.fillText(step < 1000 ? clock(this.g.t0 + t).slice(3) : clock(this.g.t0 + t).slice(0, 8), x + 2, 10);
    }
  };
  Group.prototype.rebalances = function (ctx, h, hits) {
    let lastLabel = -1e9;
    for (const r of this.g.rebs) {
      const x = this.x(r.t), x2 = this.x(r.end == null ? r.t : r.end);
      if (x2 < LEFT || x > this.width) continue;
      ctx.fillStyle = "rgba(255,170,60,0.14)"; ctx.fillRect(Math.max(x, LEFT), AXIS - 12, Math.max(x2 - Math.max(x, LEFT), 1), h);
      if (x < LEFT) continue;
      ctx.strokeStyle = "#e80"; ctx.beginPath(); ctx.moveTo(x, AXIS - 12); ctx.lineTo(x, h); ctx.stroke();
      ctx.fillStyle = "#a50"; ctx.font = "bold 10px sans-serif";
      const lw = ctx.measureText(r.label).width + 6;       // labels that would overlap the previous one: skipped
      if (x >= lastLabel) { ctx.fillText(r.label, x + 2, AXIS - 2); lastLabel = x + lw; }
      hits.push({x: x - 3, y: 0, w: Math.max(x2 - x, 0) + 6, h: AXIS, tip: "<b>rebalance " + esc(r.label) + "</b> at "
        + clock(this.g.t0 + r.t) + "<br>" + esc(r.text), cause: r.cause});
    }
  };
  Group.prototype.draw = function () {
    const g = this.g, hits = [], lh = this.lh, r = lh >= 16 ? 4 : 3;
    this.hits = hits;
    this.range.textContent = clock(g.t0 + this.a) + " – " + clock(g.t0 + this.b) + " UTC ("
      + ((this.b - this.a) / 1000).toFixed(3) + " s shown of " + (g.span / 1000).toFixed(1) + " s)";
    // the lanes the filter keeps that have something in the time range shown (zoomed in: fewer lanes)
    const lanes = g.lanes.map((l, i) => [l, i]).filter(([l, i]) => matches(l.match)
      && this.extent[i][1] >= this.a && this.extent[i][0] <= this.b);
    const h = AXIS + Math.max(lanes.length, 1) * lh + 6;
    const ctx = setupCanvas(this.lanesCanvas, this.width, h);
    ctx.fillStyle = "#fafafa"; ctx.fillRect(0, 0, this.width, h);
    this.axis(ctx, h);
    this.rebalances(ctx, h, hits);
    const row = {};
    lanes.forEach(([l, i], k) => { row[i] = AXIS + k * lh; });
    ctx.font = (lh >= 16 ? 11 : 9) + "px sans-serif";
    lanes.forEach(([l, i], k) => {
      const y = row[i];
      if (k % 2) { ctx.fillStyle = "rgba(0,0,0,0.03)"; ctx.fillRect(0, y, this.width, lh); }
      ctx.fillStyle = "#333"; ctx.fillText(fit(ctx, l.label, LEFT - 10), 4, y + lh - 4);
      hits.push({x: 0, y: y, w: LEFT - 4, h: lh, tip: esc(l.title)});
    });
    ctx.save(); ctx.beginPath(); ctx.rect(LEFT, 0, this.width - LEFT, h); ctx.clip();
    for (const s of g.segs) {          // [lane, from, to, solid_to, leader, text]
      const y = row[s[0]]; if (y == null) continue;
      const x1 = this.x(s[1]), x2 = this.x(s[2]), xs = this.x(s[3]);
      if (x2 < LEFT || x1 > this.width) continue;
      ctx.fillStyle = s[4] ? "#286" : "#4a8"; ctx.fillRect(x1, y + 3, Math.max(xs - x1, 1.5), lh - 6);
      if (s[2] > s[3]) {               // still a member, but no frame from it: absent or silent
        ctx.fillStyle = "#cfe3d8"; ctx.fillRect(xs, y + lh / 2 - 2, Math.max(x2 - xs, 1), 4);
      }
      ctx.fillStyle = "#fff"; ctx.fillRect(x1, y + 3, 1, lh - 6);
      hits.push({x: x1, y: y + 3, w: Math.max(x2 - x1, 2), h: lh - 6, tip: esc(s[5])
        + (s[2] > s[3] ? "<br>no frame from it after " + clock(g.t0 + s[3]) : "")});
    }
    for (const m of g.marks) {         // [lane, t, kind, text, frames]
      const y = row[m[0]]; if (y == null) continue;
      const x = this.x(m[1]); if (x < LEFT - 4 || x > this.width) continue;
      ctx.fillStyle = KIND_COLOUR[m[2]] || "#555"; ctx.strokeStyle = "#fff"; ctx.beginPath();
      const cy = y + lh / 2;
      if (m[2].startsWith("static")) { ctx.moveTo(x, cy - r - 2); ctx.lineTo(x + r + 2, cy); ctx.lineTo(x, cy + r + 2); ctx.lineTo(x - r - 2, cy); }
      else ctx.arc(x, cy, r, 0, 7);
      ctx.fill(); ctx.stroke();
      hits.push({x: x, y: y + lh / 2, r: 5, tip: "<b>" + esc(m[2]) + "</b> " + clock(g.t0 + m[1]) + "<br>" + esc(m[3]),
        frames: m[4]});
    }
    ctx.restore();
    if (!lanes.length) { ctx.fillStyle = "#999"; ctx.fillText("no member matches the filter in this time range", LEFT, AXIS + 12); }
    if (this.parts) this.parts.draw();
  };

  // ------------------------------------------------------------------ partitions
  function Partitions(grp, root) {
    const p = grp.g.parts;
    this.grp = grp; this.p = p;
    this.total = p.topics.reduce((n, t) => n + t.rows.length, 0);
    this.ph = this.total <= 64 ? 12 : 6;
    this.open = {}; p.topics.forEach((t, i) => { this.open[i] = this.total <= 64 || (i === 0 && this.total <= 400); });
    const legend = (p.legend || []).map(l => "<span class='owner' title='" + esc(l.title) + "'><i style='background:"
      + l.colour + "'></i>" + esc(l.label) + "</span>").join(" ");
    root.innerHTML = "<div class='muted'>partitions: " + this.total + " in " + p.topics.length + " topic(s); "
      + "red: no owner (unavailable), orange: its owner sent no frame any more (stalled), grey: before the first assignment, "
      + "blue-grey: owner unknown (the trace began after the group formed); click a topic to open or close it</div>"
      + "<div class='legend'>owners: " + legend + "</div>"
      + "<canvas class='strip'></canvas><div class='scroll'><canvas class='rows'></canvas><div class='spacer'></div></div>";
    this.strip = root.querySelector("canvas.strip");
    this.scroll = root.querySelector(".scroll");
    this.spacer = root.querySelector(".spacer");
    this.canvas = root.querySelector("canvas.rows");
    this.scroll.addEventListener("scroll", () => this.drawRows());
    this.hits = []; this.stripHits = [];
    grp.interact(this.canvas, () => this.hits);
    grp.interact(this.strip, () => this.stripHits);
  }
  Partitions.prototype.layout = function () {
    const rows = [];
    this.p.topics.forEach((t, i) => {
      rows.push({topic: i, h: 16});
      if (this.open[i]) for (const r of t.rows) rows.push({topic: i, part: r, h: this.ph});
    });
    return rows;
  };
  Partitions.prototype.heat = function (steps, w) {     // most partitions unavailable within each pixel column
    const grp = this.grp, out = new Float64Array(w);
    for (let i = 0; i < steps.length; i++) {
      const [t, n] = steps[i]; if (!n) continue;
      const t2 = i + 1 < steps.length ? steps[i + 1][0] : this.grp.g.span;
      const x1 = Math.max(Math.floor(grp.x(t) - LEFT), 0), x2 = Math.min(Math.ceil(grp.x(t2) - LEFT), w);
      for (let x = x1; x < Math.max(x2, x1 + 1) && x < w; x++) if (out[x] < n) out[x] = n;
    }
    return out;
  };
  Partitions.prototype.drawHeat = function (ctx, steps, y, h, max, rgb) {
    const w = this.grp.width - LEFT - RIGHT, v = this.heat(steps, w);
    for (let i = 0; i < w; i++) if (v[i] > 0) {
      ctx.fillStyle = "rgba(" + (rgb || "210,30,30") + "," + (0.25 + 0.75 * Math.min(v[i] / max, 1)).toFixed(3) + ")";
      const hh = Math.max(h * Math.min(v[i] / max, 1), 2); ctx.fillRect(LEFT + i, y + h - hh, 1, hh);
    }
    return v;
  };
  Partitions.prototype.draw = function () {
    const grp = this.grp, p = this.p, w = grp.width;
    const ctx = setupCanvas(this.strip, w, STRIP + AXIS);
    ctx.fillStyle = "#fff"; ctx.fillRect(0, 0, w, STRIP + AXIS);
    grp.axis(ctx, STRIP + AXIS);
    this.stripHits = [];
    grp.rebalances(ctx, STRIP + AXIS, this.stripHits);
    const top = Math.max(p.max_unavailable, p.max_stalled || 0, 1);
    this.drawHeat(ctx, p.stalled || [], AXIS, STRIP - 4, top, "242,165,65");    // stalled: orange, under the red
    const v = this.drawHeat(ctx, p.unavailable, AXIS, STRIP - 4, top);
    ctx.fillStyle = "#333"; ctx.font = "11px sans-serif";
    ctx.fillText("unavailable partitions", 4, AXIS + 12);
    ctx.fillStyle = "#888"; ctx.fillText("peak " + (p.max_unavailable || 0) + " of " + this.total
      + (p.max_stalled ? ", stalled " + p.max_stalled : ""), 4, AXIS + 26);
    this.stripHits.push({x: LEFT, y: AXIS, w: w - LEFT, h: STRIP, tipAt: x => (v[Math.round(x - LEFT)] || 0)
      + " partition(s) unavailable at " + clock(grp.g.t0 + grp.t(x))});
    this.rows = this.layout();
    const total = this.rows.reduce((n, r) => n + r.h, 0);
    this.viewH = Math.min(total, 460);
    this.spacer.style.height = (total - this.viewH) + "px";
    this.scroll.style.height = (this.viewH + 2) + "px";
    this.drawRows();
  };
  Partitions.prototype.drawRows = function () {
    const grp = this.grp, p = this.p, w = grp.width, top = this.scroll.scrollTop, vh = this.viewH;
    const ctx = setupCanvas(this.canvas, w, vh);
    ctx.fillStyle = "#fafafa"; ctx.fillRect(0, 0, w, vh);
    const hits = []; this.hits = hits;
    let y = -top;
    ctx.font = "11px sans-serif";
    for (const r of this.rows) {
      const y0 = y; y += r.h;
      if (y < 0) continue; if (y0 > vh) break;
      const t = p.topics[r.topic];
      if (!r.part) {
        ctx.fillStyle = "#eef"; ctx.fillRect(0, y0, w, r.h - 1);
        ctx.fillStyle = "#223"; ctx.fillText((this.open[r.topic] ? "▾ " : "▸ ") + fit(ctx, t.name, LEFT - 70) + " (" + t.rows.length + ")", 4, y0 + 12);
        ctx.save(); ctx.beginPath(); ctx.rect(LEFT, y0, w - LEFT, r.h); ctx.clip();
        this.drawHeat(ctx, t.unavailable, y0 + 1, r.h - 2, p.max_unavailable || 1);   // same scale as the strip
        ctx.restore();
        hits.push({x: 0, y: y0, w: LEFT, h: r.h, tip: esc(t.name) + ": click to " + (this.open[r.topic] ? "close" : "open"),
          click: () => { this.open[r.topic] = !this.open[r.topic]; this.draw(); }});
        continue;
      }
      const [part, owners, gaps, bars] = r.part;  // owners: [from, to, owner], gaps: [from, to, kind, cause, stalled]
      if (r.h >= 10 || part % 10 === 0) { ctx.fillStyle = "#555"; ctx.font = (r.h >= 10 ? 10 : 7) + "px sans-serif";
        ctx.fillText(t.name.slice(0, 18) + "-" + part, 14, y0 + r.h - 1); }
      ctx.save(); ctx.beginPath(); ctx.rect(LEFT, y0, w - LEFT, r.h); ctx.clip();
      if (!bars) { ctx.fillStyle = "#eee"; ctx.fillRect(LEFT, y0 + 1, w - LEFT, r.h - 2); }
      for (const [a, b, o] of owners) {
        const x1 = grp.x(a), x2 = grp.x(b); if (x2 < LEFT || x1 > w) continue;
        const name = p.owners[o];
        ctx.globalAlpha = matches(name) ? 1 : 0.12;
        ctx.fillStyle = p.colours[o]; ctx.fillRect(x1, y0 + 1, Math.max(x2 - x1, 1), r.h - 2);
        hits.push({x: x1, y: y0, w: Math.max(x2 - x1, 1), h: r.h, tip: esc(t.name + "-" + part) + " owned by <b>" + esc(name)
          + "</b><br>" + clock(grp.g.t0 + a) + " – " + clock(grp.g.t0 + b)});
      }
      ctx.globalAlpha = 1;
      for (const [a, b, kind, cause, stalled] of gaps) {
        if (stalled != null && stalled < a) {    // the owner's last frame came earlier: stalled, not consuming
          const s1 = grp.x(stalled), s2 = grp.x(a);
          ctx.fillStyle = "#f2a541"; ctx.fillRect(s1, y0 + 1, Math.max(s2 - s1, 1), r.h - 2);
          hits.push({x: s1, y: y0, w: Math.max(s2 - s1, 1), h: r.h, tip: esc(t.name + "-" + part) + " <b>stalled "
            + (a - stalled) + " ms</b>: no frame from its owner after " + clock(grp.g.t0 + stalled), cause: cause});
        }
        const x1 = grp.x(a), x2 = grp.x(b); if (x2 < LEFT || x1 > w) continue;
        ctx.fillStyle = GAP_COLOUR[kind]; ctx.fillRect(x1, y0 + 1, Math.max(x2 - x1, 1.5), r.h - 2);
        hits.push({x: x1 - 1, y: y0, w: Math.max(x2 - x1, 1.5) + 2, h: r.h, tip: esc(t.name + "-" + part) + (kind === 2 ?
          " owner <b>unknown</b> (the trace began after the group formed; no assignment of it seen before)"
          : kind ? " not assigned yet" : " <b>unavailable " + (b - a) + " ms</b>") + "<br>" + clock(grp.g.t0 + a) + " – "
          + clock(grp.g.t0 + b) + (cause ? "<br>cause " + esc(cause) : ""), cause: cause});
      }
      ctx.restore();
    }
  };

  // ------------------------------------------------------------------ tables and filter
  function filterTables() {
    for (const tr of document.querySelectorAll("tr[data-m]")) tr.style.display = matches(tr.dataset.m) ? "" : "none";
  }
  const groups = [];
  try {
    for (const g of D.groups) {
      const root = document.getElementById("view-" + g.id);
      if (root) groups.push(new Group(g, root));
    }
    document.getElementById("member-filter").addEventListener("input", ev => {
      filter = ev.target.value.trim().toLowerCase();
      filterTables(); groups.forEach(g => g.draw());
    });
  } catch (e) {
    errors.push(String(e && e.stack || e));
  }
  // a link to a cause chain or a frame: report.html#cause=GROUP:GEN or #frame=CONN:CORR opens it
  const want = decodeURIComponent(location.hash.slice(1)).match(/^(cause|frame)=(.+)$/);
  if (want) for (const g of groups) {
    if (want[1] === "cause" && g.g.causes[want[2]]) { g.show("<b>rebalance cause</b>", [], want[2]); break; }
    if (want[1] === "frame" && D.frames[want[2]]) { g.show("<b>frame " + esc(want[2]) + "</b>", [want[2]]); break; }
  }
  window.kshimViewer = {groups: groups, data: D};    // for scripted checks (tests, screenshots)
  const status = document.getElementById("viewer-status");
  status.dataset.groups = groups.length;
  status.dataset.lanes = groups.reduce((n, g) => n + g.g.lanes.length, 0);
  status.dataset.errors = errors.length;
  if (errors.length) { status.textContent = "viewer error: " + errors.join("; "); status.className = "warn"; }
})();
