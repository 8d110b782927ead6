// The 3-D view of a titop-fmu run: a small Canvas-2D renderer (perspective projection,
// primitives sorted back to front), the bodies drawn from their data, a time line.
// Data: the JSON of titop_fmu/viewer/scene.py in <script id="scene">. Inertial frame y up.
"use strict";
(function () {
  const $ = (id) => document.getElementById(id);
  const fail = (msg) => { $("error").textContent = "viewer error: " + msg; };
  window.addEventListener("error", (e) => fail(e.message));

  // ---- data --------------------------------------------------------------------------------
  const S = JSON.parse($("scene").textContent);
  function decode(d, quantum) {            // integers written as differences, times a quantum
    const out = new Float64Array(d.length);
    let acc = 0;
    for (let i = 0; i < d.length; i++) { acc += d[i]; out[i] = acc * quantum; }
    return out;
  }
  const T = decode(S.t, S.t_quantum), N = T.length, T0 = T[0], T1 = T[N - 1];
  const SIZE = S.size;
  const bodies = S.bodies.map((b) => Object.assign({}, b, {
    P: b.p.map((d) => decode(d, S.p_quantum)), Q: b.q.map((d) => decode(d, S.q_quantum)),
    D: b.flex ? b.flex.d.map((d) => decode(d, S.p_quantum)) : null }));

  // ---- small vector algebra ------------------------------------------------------------------
  const add = (a, b) => [a[0] + b[0], a[1] + b[1], a[2] + b[2]];
  const sub = (a, b) => [a[0] - b[0], a[1] - b[1], a[2] - b[2]];
  const mul = (a, s) => [a[0] * s, a[1] * s, a[2] * s];
  const dot = (a, b) => a[0] * b[0] + a[1] * b[1] + a[2] * b[2];
  const cross = (a, b) => [a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0]];
  const unit = (a) => mul(a, 1 / (Math.hypot(a[0], a[1], a[2]) || 1));
  const apply = (R, v) => [R[0] * v[0] + R[1] * v[1] + R[2] * v[2],
    R[3] * v[0] + R[4] * v[1] + R[5] * v[2], R[6] * v[0] + R[7] * v[1] + R[8] * v[2]];
  function quatMatrix(w, x, y, z) {        // the DCM P_a/i (row major) of a quaternion
    const s = 2 / (w * w + x * x + y * y + z * z);
    return [1 - s * (y * y + z * z), s * (x * y - w * z), s * (x * z + w * y),
      s * (x * y + w * z), 1 - s * (x * x + z * z), s * (y * z - w * x),
      s * (x * z - w * y), s * (y * z + w * x), 1 - s * (x * x + y * y)];
  }
  const column = (R, j) => [R[j], R[3 + j], R[6 + j]];

  // ---- frames at a time: samples interpolated (positions linearly, attitudes by nlerp) -------
  function sampleAt(t) {
    if (!(t > T0)) return [0, 0];
    if (t >= T1) return [N - 1, 0];
    let lo = 0, hi = N - 1;
    while (hi - lo > 1) { const mid = (lo + hi) >> 1; if (T[mid] <= t) lo = mid; else hi = mid; }
    return [lo, (t - T[lo]) / (T[hi] - T[lo])];
  }
  function poseAt(b, k, a) {
    const k2 = Math.min(k + 1, N - 1), lerp = (v) => v[k] + a * (v[k2] - v[k]);
    const q = b.Q.map(lerp);
    return { p: b.P.map(lerp), R: quatMatrix(q[0], q[1], q[2], q[3]) };
  }
  const toWorld = (pose, v) => add(pose.p, apply(pose.R, v));
  function deformedAt(b, k, a) {           // a flexible body's drawn points in its frame, displaced
    const k2 = Math.min(k + 1, N - 1);
    return b.flex.points.map((x, j) => x.map((c, i) => {
      const d = b.D[3 * j + i]; return c + d[k] + a * (d[k2] - d[k]); }));
  }
  const traces = S.traces.map((tr) => {        // every sample's point, once
    const b = bodies[tr.body], pts = new Float64Array(3 * N);
    for (let k = 0; k < N; k++) pts.set(toWorld(poseAt(b, k, 0), tr.point), 3 * k);
    return Object.assign({}, tr, { pts: pts, color: b.color });
  });

  // ---- colours -------------------------------------------------------------------------------
  function rgb(hex) { const v = parseInt(hex.slice(1), 16); return [v >> 16, (v >> 8) & 255, v & 255]; }
  function shade(hex, f, alpha) {          // f > 0 towards white, f < 0 towards black
    const c = rgb(hex).map((x) => Math.round(f >= 0 ? x + (255 - x) * f : x * (1 + f)));
    return alpha === undefined ? `rgb(${c})` : `rgba(${c},${alpha})`;
  }

  // ---- camera --------------------------------------------------------------------------------
  const FOV = 40 * Math.PI / 180;
  const cam = { target: [0, 0, 0], az: 0.6, el: 0.35, dist: 10, offset: [0, 0, 0] };
  let follow = S.follow, eye, right, up, fwd, F, W = 1, H = 1;
  function centroid(poses) {
    let c = [0, 0, 0];
    poses.forEach((p) => { c = add(c, p.p); });
    return mul(c, 1 / poses.length);
  }
  function resetCamera() {
    const lo = S.bounds[0], hi = S.bounds[1];
    const radius = follow ? 0.75 * SIZE : 0.5 * Math.hypot(hi[0] - lo[0], hi[1] - lo[1], hi[2] - lo[2]);
    cam.target = mul(add(lo, hi), 0.5);
    cam.offset = [0, 0, 0];
    cam.az = 0.6; cam.el = 0.35;
    cam.dist = Math.max(radius, 0.5 * SIZE) / Math.sin(FOV / 2) * 1.1;
  }
  function setBasis(target) {
    const ce = Math.cos(cam.el), back = [ce * Math.sin(cam.az), Math.sin(cam.el), ce * Math.cos(cam.az)];
    eye = add(target, mul(back, cam.dist));
    fwd = mul(back, -1);
    right = unit(cross(fwd, [0, 1, 0]));
    up = cross(right, fwd);
    F = (H / 2) / Math.tan(FOV / 2);
  }
  const toCam = (P) => { const d = sub(P, eye); return [dot(d, right), dot(d, up), dot(d, fwd)]; };
  const screen = (c) => [W / 2 + F * c[0] / c[2], H / 2 - F * c[1] / c[2]];
  const near = () => 0.02 * cam.dist;

  // ---- primitives, drawn back to front ---------------------------------------------------------
  const canvas = $("view"), ctx = canvas.getContext("2d");
  let prims = [];
  function clip(a, b) {                     // a segment in camera coordinates, cut at the near plane
    const zn = near();
    if (a[2] < zn && b[2] < zn) return null;
    const cut = (p, q) => { const s = (zn - p[2]) / (q[2] - p[2]); return add(p, mul(sub(q, p), s)); };
    return [a[2] < zn ? cut(a, b) : a, b[2] < zn ? cut(b, a) : b];
  }
  function segment(A, B, color, width, opt) {     // width: in world units (a tube), opt.px: in pixels
    const s = clip(toCam(A), toCam(B));
    if (!s) return;
    opt = opt || {};
    const z = (s[0][2] + s[1][2]) / 2;
    prims.push({ z: z - (opt.bias || 0) * SIZE, draw() {
      const a = screen(s[0]), b = screen(s[1]);
      ctx.strokeStyle = color;
      ctx.lineWidth = opt.px || Math.max(1, width * F / z);
      ctx.setLineDash(opt.dash ? [6, 5] : []);
      ctx.beginPath(); ctx.moveTo(a[0], a[1]); ctx.lineTo(b[0], b[1]); ctx.stroke();
      if (opt.head) {                         // arrow head in the screen plane
        const d = [b[0] - a[0], b[1] - a[1]], l = Math.hypot(d[0], d[1]);
        if (l > 1) {
          const h = Math.min(0.35 * l, 4 + 2.5 * ctx.lineWidth), u = [d[0] / l, d[1] / l];
          ctx.fillStyle = color;
          ctx.beginPath(); ctx.moveTo(b[0] + u[0] * h * 0.6, b[1] + u[1] * h * 0.6);
          ctx.lineTo(b[0] - u[0] * h * 0.6 - u[1] * h * 0.5, b[1] - u[1] * h * 0.6 + u[0] * h * 0.5);
          ctx.lineTo(b[0] - u[0] * h * 0.6 + u[1] * h * 0.5, b[1] - u[1] * h * 0.6 - u[0] * h * 0.5);
          ctx.closePath(); ctx.fill();
        }
      }
    } });
  }
  function sphere(C, r, color) {
    const c = toCam(C);
    if (c[2] < near() + r) return;
    prims.push({ z: c[2], draw() {
      const p = screen(c), R = Math.max(1.5, r * F / c[2]);
      const g = ctx.createRadialGradient(p[0] - 0.35 * R, p[1] - 0.4 * R, 0.1 * R, p[0], p[1], R);
      g.addColorStop(0, shade(color, 0.75)); g.addColorStop(0.45, color); g.addColorStop(1, shade(color, -0.45));
      ctx.fillStyle = g;
      ctx.beginPath(); ctx.arc(p[0], p[1], R, 0, 2 * Math.PI); ctx.fill();
    } });
  }
  const LIGHT = unit([0.4, 1, 0.6]);
  function face(pts, color) {               // a planar polygon, front faces only, flat shaded
    const c = pts.map(toCam);
    if (c.some((p) => p[2] < near())) return;
    const n = unit(cross(sub(pts[1], pts[0]), sub(pts[2], pts[0])));
    const centre = mul(pts.reduce(add), 1 / pts.length);
    if (dot(n, sub(eye, centre)) <= 0) return;
    const light = Math.abs(dot(n, LIGHT));
    prims.push({ z: c.reduce((s, p) => s + p[2], 0) / c.length, draw() {
      ctx.fillStyle = shade(color, 0.75 * light - 0.2, 0.3);
      ctx.strokeStyle = shade(color, -0.3, 0.55);
      ctx.lineWidth = 1; ctx.setLineDash([]);
      ctx.beginPath();
      c.forEach((p, i) => { const s = screen(p); if (i) ctx.lineTo(s[0], s[1]); else ctx.moveTo(s[0], s[1]); });
      ctx.closePath(); ctx.fill(); ctx.stroke();
    } });
  }
  const labels = [];
  function label(P, text, color) { const c = toCam(P); if (c[2] > near()) labels.push([screen(c), text, color]); }
  function axes(pose, length, width, bias) {
    ["#e03030", "#20a040", "#2060e0"].forEach((col, j) =>
      segment(pose.p, add(pose.p, mul(column(pose.R, j), length)), col, width, { head: true, bias: bias }));
  }

  // ---- the scene at time t ---------------------------------------------------------------------
  let t = T0;
  const show = { frames: true, labels: true, trace: true };
  function niceStep(x) { const e = Math.pow(10, Math.floor(Math.log10(x))), m = x / e;
    return (m < 1.5 ? 1 : m < 3.5 ? 2 : m < 7.5 ? 5 : 10) * e; }
  function shadows(y, poses) {              // a disc under each centre of mass, when seen from above
    if (eye[1] <= y) return;
    ctx.fillStyle = "rgba(60, 64, 72, 0.13)";
    bodies.forEach((b, i) => {
      const c = toWorld(poses[i], b.com), r = Math.max(b.radius, 0.02 * SIZE) * 1.1;
      const pts = [];
      for (let j = 0; j < 20; j++) {
        const a = 2 * Math.PI * j / 20, p = toCam([c[0] + r * Math.cos(a), y, c[2] + r * Math.sin(a)]);
        if (p[2] < near()) return;
        pts.push(screen(p));
      }
      ctx.beginPath();
      pts.forEach((p, j) => { if (j) ctx.lineTo(p[0], p[1]); else ctx.moveTo(p[0], p[1]); });
      ctx.closePath(); ctx.fill();
    });
  }
  function grid(target, poses) {
    const step = niceStep(SIZE / 4), lo = S.bounds[0], hi = S.bounds[1];
    let y = S.ground, x0, x1, z0, z1;
    if (follow) {
      y = Math.min(...poses.map((p) => p.p[1])) - 0.6 * SIZE;
      const h = 2 * SIZE;
      x0 = target[0] - h; x1 = target[0] + h; z0 = target[2] - h; z1 = target[2] + h;
    } else {
      const m = 0.6 * SIZE;
      x0 = lo[0] - m; x1 = hi[0] + m; z0 = lo[2] - m; z1 = hi[2] + m;
    }
    x0 = Math.floor(x0 / step) * step; x1 = Math.ceil(x1 / step) * step;
    z0 = Math.floor(z0 / step) * step; z1 = Math.ceil(z1 / step) * step;
    const saved = prims; prims = [];
    for (let x = x0; x <= x1 + 1e-9 * step; x += step) segment([x, y, z0], [x, y, z1], "#c9ccd2", 0, { px: 1 });
    for (let z = z0; z <= z1 + 1e-9 * step; z += step) segment([x0, y, z], [x1, y, z], "#c9ccd2", 0, { px: 1 });
    prims.forEach((p) => p.draw());
    prims = saved;
    shadows(y, poses);
  }
  function render() {
    const [k, a] = sampleAt(t);
    const poses = bodies.map((b) => poseAt(b, k, a));
    const target = follow ? add(centroid(poses), cam.offset) : cam.target;
    setBasis(target);
    ctx.clearRect(0, 0, W, H);
    prims = []; labels.length = 0;
    grid(target, poses);
    if (show.trace) {
      traces.forEach((tr) => {
        const pts = [];
        for (let i = 0; i <= k; i++) pts.push([tr.pts[3 * i], tr.pts[3 * i + 1], tr.pts[3 * i + 2]]);
        pts.push(toWorld(poses[tr.body], tr.point));
        ctx.strokeStyle = shade(tr.color, 0.25, 0.75); ctx.lineWidth = 1.5; ctx.setLineDash([]);
        ctx.beginPath();
        let pen = false;
        for (let i = 1; i < pts.length; i++) {
          const s = clip(toCam(pts[i - 1]), toCam(pts[i]));
          if (!s) { pen = false; continue; }
          const p = screen(s[0]), q = screen(s[1]);
          if (!pen) ctx.moveTo(p[0], p[1]);
          ctx.lineTo(q[0], q[1]); pen = true;
        }
        ctx.stroke();
      });
    }
    if (show.frames) {                       // the inertial frame R_i
      axes({ p: [0, 0, 0], R: [1, 0, 0, 0, 1, 0, 0, 0, 1] }, 0.3 * SIZE, 0.008 * SIZE, 0);
      ["x", "y", "z"].forEach((n, j) => label(mul([j === 0, j === 1, j === 2].map(Number), 0.34 * SIZE), n, "#555"));
      label([0, 0, 0], "R_i", "#555");
    }
    bodies.forEach((b, i) => {
      const pose = poses[i], P = pose.p, tube = 0.022 * SIZE;
      if (b.mesh) {
        const c = b.mesh.points.map((v) => toWorld(pose, v));
        b.mesh.faces.forEach((f) => face(f.map((j) => c[j]), b.color));
      }
      if (b.flex) {                          // the deformed body: a line through its points, or dots
        const c = deformedAt(b, k, a).map((v) => toWorld(pose, v));
        if (b.flex.line) c.slice(1).forEach((x, j) => segment(c[j], x, b.color, tube));
        else c.forEach((x) => sphere(x, 0.006 * SIZE, b.color));
      } else b.children.forEach((c) => segment(P, toWorld(pose, c), b.color, tube));
      const com = toWorld(pose, b.com);
      if (Math.hypot(b.com[0], b.com[1], b.com[2]) > 1e-9 && !b.mesh && !b.flex) {   // a rod to the centre of mass
        segment(P, com, b.children.length ? shade(b.color, 0.35) : b.color, (b.children.length ? 0.6 : 1) * tube);
      }
      if (b.radius > 0) sphere(com, b.radius, b.color);
      if (b.parent >= 0 || b.joint !== "base") {
        const C = b.parent >= 0 ? toWorld(poses[b.parent], b.joint_point) : P;
        sphere(C, 0.02 * SIZE, "#444444");
        if (b.joint === "prismatic") segment(C, P, "#555555", 0.5 * tube, { bias: 0.01 });
        if (b.axis) {
          const ax = apply(pose.R, b.axis), len = 0.16 * SIZE;
          const from = b.joint === "revolute" ? sub(P, mul(ax, 0.5 * len)) : C;
          segment(from, add(from, mul(ax, b.joint === "revolute" ? 1.5 * len : len)), "#333333", 0.35 * tube,
            { head: true, bias: 0.02 });
        }
      }
      if (show.frames) axes(pose, 0.12 * SIZE, 0.006 * SIZE, 0.03);
      if (show.labels) label(com, b.name, shade(b.color, -0.3));
    });
    S.closures.forEach((c) => {
      segment(toWorld(poses[c.a[0]], c.a[1]), toWorld(poses[c.b[0]], c.b[1]), "#555555", 0, { px: 2, dash: true });
    });
    prims.sort((p, q) => q.z - p.z);
    prims.forEach((p) => p.draw());
    ctx.setLineDash([]);
    ctx.font = "600 12px system-ui, sans-serif";
    ctx.lineJoin = "round";
    const taken = [];                        // labels moved up or down off the ones already placed
    labels.forEach(([p, text, color]) => {
      const w = ctx.measureText(text).width, x = p[0] + 8;
      let y = p[1] - 8;
      for (const dy of [0, 14, -14, 28, -28, 42]) {
        const free = !taken.some((r) => x < r[0] + r[2] && r[0] < x + w && Math.abs(p[1] - 8 + dy - r[1]) < 13);
        if (free) { y = p[1] - 8 + dy; break; }
      }
      taken.push([x, y, w]);
      ctx.lineWidth = 3; ctx.strokeStyle = "rgba(255,255,255,0.9)"; ctx.fillStyle = color;
      ctx.strokeText(text, x, y); ctx.fillText(text, x, y);
    });
    if (follow) {
      const c = centroid(poses).map((x) => x.toPrecision(4)).join(", ");
      ctx.font = "12px system-ui, sans-serif"; ctx.fillStyle = "#555"; ctx.textAlign = "right";
      ctx.fillText(`camera following the bodies, centred at (${c}) m`, W - 12, 20);
      ctx.textAlign = "left";
    }
    const digits = N > 1 ? Math.max(2, Math.min(4, Math.ceil(-Math.log10((T1 - T0) / (N - 1))))) : 2;
    $("clock").textContent = `t = ${t.toFixed(digits)} s / ${T1.toFixed(digits)} s`;
    $("time").value = t;
    document.documentElement.dataset.t = String(t);
  }

  // ---- time line -------------------------------------------------------------------------------
  let playing = false, speed = 1, last = null, dirty = true;
  const redraw = () => { dirty = true; };
  function setTime(x) { t = Math.min(T1, Math.max(T0, x)); redraw(); }
  function setPlaying(on) {
    playing = on && N > 1;
    if (playing && t >= T1) t = T0;
    last = null;
    $("play").innerHTML = playing ? "&#10074;&#10074;" : "&#9654;";
  }
  function frame(now) {
    if (playing) {
      if (last !== null) {
        let next = t + (now - last) / 1000 * speed;
        if (next >= T1) {
          if ($("loop").checked) next = T0 + (next - T1) % Math.max(T1 - T0, 1e-9);
          else { next = T1; setPlaying(false); }
        }
        setTime(next);
      }
      last = now;
    }
    if (dirty) { dirty = false; render(); }
    requestAnimationFrame(frame);
  }

  // ---- controls -------------------------------------------------------------------------------
  $("title").textContent = S.title;
  S.notes.forEach((n) => { const d = document.createElement("div"); d.textContent = n; $("help").appendChild(d); });
  const slider = $("time");
  slider.min = T0; slider.max = T1;
  slider.addEventListener("input", () => setTime(parseFloat(slider.value)));
  $("play").addEventListener("click", () => setPlaying(!playing));
  $("speed").addEventListener("change", (e) => { speed = parseFloat(e.target.value); });
  $("follow").checked = follow;
  $("follow").addEventListener("change", (e) => { follow = e.target.checked; resetCamera(); redraw(); });
  ["frames", "labels", "trace"].forEach((id) => $(id).addEventListener("change", (e) => {
    show[id] = e.target.checked; redraw(); }));
  $("reset").addEventListener("click", () => { resetCamera(); redraw(); });
  document.addEventListener("keydown", (e) => {
    if (e.target.tagName === "SELECT") return;
    if (e.key === " ") { setPlaying(!playing); e.preventDefault(); }
    const [k] = sampleAt(t);
    if (e.key === "ArrowRight") { setPlaying(false); setTime(T[Math.min(N - 1, k + 1)]); }
    if (e.key === "ArrowLeft") { setPlaying(false); setTime(T[Math.max(0, t > T[k] ? k : k - 1)]); }
  });
  let drag = null;
  canvas.addEventListener("contextmenu", (e) => e.preventDefault());
  canvas.addEventListener("pointerdown", (e) => {
    drag = { x: e.clientX, y: e.clientY, pan: e.button === 2 || e.shiftKey };
    canvas.setPointerCapture(e.pointerId); canvas.classList.add("dragging");
  });
  canvas.addEventListener("pointermove", (e) => {
    if (!drag) return;
    const dx = e.clientX - drag.x, dy = e.clientY - drag.y;
    drag.x = e.clientX; drag.y = e.clientY;
    if (drag.pan) {
      const s = cam.dist * Math.tan(FOV / 2) / (H / 2), move = add(mul(right, -dx * s), mul(up, dy * s));
      if (follow) cam.offset = add(cam.offset, move); else cam.target = add(cam.target, move);
    } else {
      cam.az -= dx * 0.008;
      cam.el = Math.max(-1.5, Math.min(1.5, cam.el + dy * 0.008));
    }
    redraw();
  });
  const release = () => { drag = null; canvas.classList.remove("dragging"); };
  canvas.addEventListener("pointerup", release);
  canvas.addEventListener("pointercancel", release);
  canvas.addEventListener("wheel", (e) => {
    cam.dist *= Math.exp(0.0012 * e.deltaY); e.preventDefault(); redraw();
  }, { passive: false });
  function resize() {
    const dpr = window.devicePixelRatio || 1;
    W = canvas.clientWidth; H = canvas.clientHeight;
    canvas.width = Math.round(W * dpr); canvas.height = Math.round(H * dpr);
    ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
    redraw();
  }
  window.addEventListener("resize", resize);
  // the URL's fragment: #t=3.5 (time, paused), az/el (camera angles, degrees), zoom, follow,
  // frames, labels, trace (0 or 1)
  function fromHash() {
    const h = new URLSearchParams(location.hash.slice(1));
    if (h.has("follow")) { follow = h.get("follow") === "1"; $("follow").checked = follow; }
    ["frames", "labels", "trace"].forEach((id) => {
      if (h.has(id)) { show[id] = h.get(id) === "1"; $(id).checked = show[id]; } });
    resetCamera();
    if (h.has("az")) cam.az = parseFloat(h.get("az")) * Math.PI / 180;
    if (h.has("el")) cam.el = parseFloat(h.get("el")) * Math.PI / 180;
    if (h.has("zoom")) cam.dist /= parseFloat(h.get("zoom"));
    if (h.has("t")) { setPlaying(false); setTime(parseFloat(h.get("t"))); } else setPlaying(true);
    redraw();
  }
  window.addEventListener("hashchange", fromHash);
  resize();
  fromHash();
  render(); dirty = false;
  const bench = parseInt(new URLSearchParams(location.hash.slice(1)).get("bench"), 10);
  if (bench > 0) {                          // #bench=N: N frames drawn across the run, the mean time kept
    const start = performance.now(), shown = t;   // (reading a pixel makes the canvas rasterize each one)
    for (let i = 0; i < bench; i++) { t = T0 + (T1 - T0) * i / bench; render(); ctx.getImageData(0, 0, 1, 1); }
    document.documentElement.dataset.renderMs = String((performance.now() - start) / bench);
    t = shown; render();
  }
  document.documentElement.dataset.ready = "1";
  requestAnimationFrame(frame);
})();
