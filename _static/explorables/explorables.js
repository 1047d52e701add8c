/* Explorable figures of posenc-course, computed and drawn in the reader's browser.
 *
 * No library, no network: the formulas are the chapters' own (the same ones as
 * posenc_autograder/reference.py), the plots are SVG, the controls are native range inputs that
 * _ext/explorables.py writes into the page with their labels. Each figure's settings (sizes,
 * seeds, seeded inputs) arrive as JSON inside the figure, from _static/explorables/constants.json.
 * window.posencExplorables[name].data() returns what a figure currently plots, for the tests.
 *
 * Why no charting library: Bokeh and Plotly load from a CDN by default and work offline only with
 * megabytes of JavaScript vendored (and kept current) beside the book; their sliders are custom
 * widgets, not native form controls. Eight small figures need scales, lines, dots, bars and a
 * heatmap: these few hundred lines, with native <input type=range> controls that every browser
 * makes keyboard-operable and announces with their <label>.
 */
(function () {
  "use strict";

  // ---------------------------------------------------------------- the chapters' formulas
  const range = (n, start = 0) => Array.from({ length: n }, (_, i) => start + i);

  /** omega_i = base^(-2i/d), in log space (Ch 2). */
  function frequencies(d, base) {
    return range(d / 2).map((i) => Math.exp(((-2 * i) / d) * Math.log(base)));
  }

  /** Rows PE[p] for p = first .. first+L-1: sin in column 2i, cos in column 2i+1 (Ch 2). */
  function encoding(L, d, base, first = 0) {
    const omega = frequencies(d, base);
    return range(L, first).map((p) => omega.flatMap((w) => [Math.sin(p * w), Math.cos(p * w)]));
  }

  /** R_i(k) with R (sin t, cos t) = (sin(t + angle), cos(t + angle)) (Ch 4). */
  function rotationBlock(angle) {
    const c = Math.cos(angle),
      s = Math.sin(angle);
    return [
      [c, s],
      [-s, c],
    ];
  }

  const matVec = (M, v) => M.map((row) => row.reduce((sum, m, j) => sum + m * v[j], 0));
  const dot = (a, b) => a.reduce((sum, x, i) => sum + x * b[i], 0);
  const norm = (v) => Math.sqrt(dot(v, v));
  const matMul = (A, B) => A.map((row) => B[0].map((_, j) => row.reduce((sum, a, k) => sum + a * B[k][j], 0)));
  const transpose = (A) => A[0].map((_, j) => A.map((row) => row[j]));

  /** max_p ||M_k PE_p - PE_{p+k}||, with M_k applied block by block (Ch 4). */
  function reconstructionError(table, blocks, k) {
    let worst = 0;
    for (let p = 0; p + k < table.length; p++) {
      const moved = blocks.flatMap((B, i) => matVec(B, [table[p][2 * i], table[p][2 * i + 1]]));
      worst = Math.max(worst, norm(moved.map((x, j) => x - table[p + k][j])));
    }
    return worst;
  }

  /** RoPE: rotate pair (x_2i, x_2i+1) of x by pos * theta_i, counter-clockwise (Ch 8). */
  function rope(x, pos, base) {
    return frequencies(x.length, base).flatMap((theta, i) => {
      const a = x[2 * i],
        b = x[2 * i + 1],
        c = Math.cos(pos * theta),
        s = Math.sin(pos * theta);
      return [a * c - b * s, a * s + b * c];
    });
  }

  /** ALiBi slopes 2^(-8h/n); other head counts append every other slope of the next power of two (Ch 8). */
  function alibiSlopes(heads) {
    const powerOfTwo = (n) => range(n, 1).map((h) => Math.pow(Math.pow(2, -8 / n), h));
    const lower = Math.pow(2, Math.floor(Math.log2(heads)));
    const extra = powerOfTwo(2 * lower)
      .filter((_, i) => i % 2 === 0)
      .slice(0, heads - lower);
    return powerOfTwo(lower).concat(lower === heads ? [] : extra);
  }

  /** r_i = length * omega_i / (2 pi): full turns of each pair over `length` positions (Ch 12). */
  const turnsIn = (omega, length) => omega.map((w) => (length * w) / (2 * Math.PI));

  /** NTK-by-parts: gamma = 0 below `low` turns (divide by scale), 1 above `high` (keep), linear between (Ch 12). */
  function byParts(omega, scale, turns, low, high) {
    return omega.map((w, i) => {
      const gamma = Math.min(1, Math.max(0, (turns[i] - low) / (high - low)));
      return ((1 - gamma) * w) / scale + gamma * w;
    });
  }

  /** Each method's omega_i' for a head stretched from L to scale * L tokens (Ch 12). */
  function stretchedFrequencies(f, method, scale) {
    const d = f.head_dim,
      L = f.train_len,
      omega = frequencies(d, f.base);
    const rules = {
      none: () => omega,
      "position interpolation": () => omega.map((w) => w * (L / (scale * L))), // m -> m L / L'
      "NTK-aware": () => frequencies(d, f.base * Math.exp((d / (d - 2)) * Math.log(scale))), // b s^(d/(d-2))
      YaRN: () => byParts(omega, scale, turnsIn(omega, L), f.yarn.alpha, f.yarn.beta),
      "Llama 3.1": () =>
        byParts(omega, scale, turnsIn(omega, L), f.llama31.low_freq_factor, f.llama31.high_freq_factor),
    };
    return rules[method]();
  }

  /** softmax(Q K^T / sqrt(d_k)) V with Q = X W_q etc. (Ch 9); softmax shifted by the row maximum. */
  function selfAttention(X, Wq, Wk, Wv) {
    const Q = matMul(X, Wq),
      K = matMul(X, Wk),
      V = matMul(X, Wv);
    const scores = matMul(Q, transpose(K)).map((row) => row.map((s) => s / Math.sqrt(Q[0].length)));
    const weights = scores.map((row) => {
      const top = Math.max(...row),
        e = row.map((s) => Math.exp(s - top)),
        total = e.reduce((a, b) => a + b, 0);
      return e.map((x) => x / total);
    });
    return matMul(weights, V);
  }

  // ------------------------------------------------- what each figure plots (same keys as Python)
  const compute = {
    "pe-heatmap": (f, s) => ({ table: encoding(f.positions, s.d_model, s.base) }),

    wavelengths: (f, s) => {
      const pair = Math.min(s.pair, s.d_model / 2 - 1);
      return {
        wavelengths: frequencies(s.d_model, s.base).map((w) => (2 * Math.PI) / w),
        pair,
        column: encoding(f.positions, s.d_model, s.base).map((row) => row[2 * pair]),
      };
    },

    "pair-rotation": (f, s) => {
      const omega = frequencies(f.d_model, f.default_base),
        table = encoding(f.positions, f.d_model, f.default_base);
      const blocks = omega.map((w) => rotationBlock(w * s.offset));
      const pairAt = (p) => [table[p][2 * s.pair], table[p][2 * s.pair + 1]];
      const block = blocks[s.pair],
        start = pairAt(s.position);
      return {
        angle: omega[s.pair] * s.offset,
        block,
        start,
        rotated: matVec(block, start),
        target: pairAt(s.position + s.offset),
        error: reconstructionError(table, blocks, s.offset),
      };
    },

    "dot-distance": (f, s) => {
      const table = encoding(f.max_distance + 1, s.d_model, s.base);
      return { dot: table.map((row) => dot(table[0], row)) };
    },

    "rope-shift": (f, s) => {
      const positions = range(f.positions, s.shift);
      const q = positions.map((m) => rope(f.inputs.query, m, s.base));
      const k = positions.map((n) => rope(f.inputs.key, n, s.base));
      return { scores: q.map((qm) => k.map((kn) => dot(qm, kn))) };
    },

    "alibi-heads": (f, s) => {
      const slopes = alibiSlopes(s.heads),
        query = Math.min(s.query, f.positions - 1);
      return { slopes, row: slopes.map((slope) => range(f.positions).map((j) => 0 - slope * Math.abs(query - j))) };
    },

    "order-sensitivity": (f, s) => {
      const L = f.ids.length,
        pe = encoding(L, f.d_model, f.default_base);
      const permutation = range(L).map((t) => (t + s.rotation) % L);
      const attend = (order, scale) =>
        selfAttention(
          order.map((t, row) => f.inputs.embedding[f.ids[t]].map((x, j) => x + scale * pe[row][j])),
          f.inputs.W_q,
          f.inputs.W_k,
          f.inputs.W_v,
        );
      const gap = (scale) => {
        const permuted = attend(permutation, scale),
          original = attend(range(L), scale);
        return permuted.map((out, t) => norm(out.map((x, j) => x - original[permutation[t]][j])));
      };
      return { permutation, with_pe: gap(s.scale), without_pe: gap(0) };
    },

    "stretched-angles": (f, s) => {
      const L = f.train_len,
        target = s.scale * L,
        omega = frequencies(f.head_dim, f.base);
      const stretched = stretchedFrequencies(f, s.method, s.scale);
      const trained = omega.map((w) => L * w),
        after = stretched.map((w) => target * w);
      return {
        frequencies: stretched,
        trained,
        before: omega.map((w) => target * w),
        after,
        // saw only an arc in training, and now passes the largest angle it saw
        unseen: trained.map((t, i) => t < 2 * Math.PI && after[i] > t * (1 + f.rounding_margin)),
        attention_scale: s.method === "YaRN" ? 0.1 * Math.log(s.scale) + 1 : 1,
      };
    },
  };

  // ------------------------------------------------------------------------------ drawing
  const SVG = "http://www.w3.org/2000/svg";
  const fmt = (x, digits = 3) =>
    x === 0
      ? "0"
      : Math.abs(x) < 1e-3 || Math.abs(x) >= 1e5
        ? x.toExponential(digits - 1)
        : Number(x.toPrecision(digits)).toString();

  function el(parent, tag, attrs = {}, text) {
    const node = document.createElementNS(SVG, tag);
    for (const [key, value] of Object.entries(attrs)) node.setAttribute(key, value);
    if (text !== undefined) node.textContent = text;
    parent.appendChild(node);
    return node;
  }

  /** Tick values for [lo, hi]: about five steps of 1, 2 or 5 times a power of ten (powers of ten on a log axis). */
  function ticks(lo, hi, log) {
    if (log)
      return range(Math.floor(Math.log10(hi)) - Math.ceil(Math.log10(lo)) + 1, Math.ceil(Math.log10(lo))).map((e) =>
        Math.pow(10, e),
      );
    const raw = (hi - lo) / 5,
      power = Math.pow(10, Math.floor(Math.log10(raw)));
    const step = power * ([1, 2, 5, 10].find((m) => m * power >= raw) || 10);
    return range(Math.floor((hi - lo) / step) + 2, Math.ceil(lo / step))
      .map((i) => i * step)
      .filter((t) => t <= hi + 1e-12);
  }

  /** An SVG chart that scales with its container: axes with ticks and labels, and scales x(), y(). */
  function chart(host, { x, y, xlabel, ylabel, logY = false, width: widest = 640, height: tall = 300, flipY = false, equal = false }) {
    const m = { top: 12, right: 16, bottom: 44, left: 64 };
    // Drawn at the width it is shown (down to 280 units), so that its text stays readable on a phone.
    const width = Math.min(widest, Math.max(280, host.clientWidth || widest));
    // Equal axes: one unit of x as long as one of y (a circle stays round), whatever the width.
    const height = equal
      ? m.top + m.bottom + ((width - m.left - m.right) * (y[1] - y[0])) / (x[1] - x[0])
      : tall;
    const svg = el(host, "svg", {
      viewBox: `0 0 ${width} ${height}`,
      class: "explorable__chart",
      "aria-hidden": "true",
      style: `max-width: ${width}px`,
    }); // shrinks on a phone, never grows past its drawn size
    const ty = (v) => (logY ? Math.log10(v) : v);
    const sx = (v) => m.left + ((v - x[0]) / (x[1] - x[0])) * (width - m.left - m.right);
    const frac = (v) => (ty(v) - ty(y[0])) / (ty(y[1]) - ty(y[0]));
    const sy = (v) =>
      flipY ? m.top + frac(v) * (height - m.top - m.bottom) : height - m.bottom - frac(v) * (height - m.top - m.bottom);
    const axes = el(svg, "g", { class: "explorable__axes" });
    el(axes, "rect", {
      x: m.left,
      y: m.top,
      width: width - m.left - m.right,
      height: height - m.top - m.bottom,
      fill: "none",
    });
    for (const t of ticks(x[0], x[1], false)) {
      el(axes, "text", { x: sx(t), y: height - m.bottom + 16, "text-anchor": "middle" }, fmt(t));
    }
    for (const t of ticks(Math.min(...y), Math.max(...y), logY)) {
      el(axes, "text", { x: m.left - 6, y: sy(t) + 4, "text-anchor": "end" }, fmt(t));
    }
    el(
      axes,
      "text",
      { x: (m.left + width - m.right) / 2, y: height - 6, "text-anchor": "middle", class: "explorable__label" },
      xlabel,
    );
    el(
      axes,
      "text",
      {
        x: 14,
        y: height / 2,
        transform: `rotate(-90 14 ${height / 2})`,
        "text-anchor": "middle",
        class: "explorable__label",
      },
      ylabel,
    );
    const layer = el(svg, "g");
    return {
      svg,
      sx,
      sy,
      layer,
      line: (xs, ys, attrs = {}) =>
        el(layer, "path", {
          d: xs.map((v, i) => `${i ? "L" : "M"}${sx(v).toFixed(2)},${sy(ys[i]).toFixed(2)}`).join(""),
          fill: "none",
          ...attrs,
        }),
      dot: (vx, vy, r, attrs = {}) => el(layer, "circle", { cx: sx(vx), cy: sy(vy), r, ...attrs }),
      image: (matrix, lo, hi) =>
        el(layer, "image", {
          x: sx(x[0]),
          y: Math.min(sy(y[0]), sy(y[1])),
          width: sx(x[1]) - sx(x[0]),
          height: Math.abs(sy(y[1]) - sy(y[0])),
          preserveAspectRatio: "none",
          href: heatmapURL(matrix, lo, hi),
          class: "explorable__pixels",
        }),
    };
  }

  /** Diverging colours (blue, near white, red) for values from lo to hi. */
  function colour(v, lo, hi) {
    const stops = [
      [33, 102, 172],
      [247, 247, 247],
      [178, 24, 43],
    ];
    const t = Math.max(0, Math.min(1, (v - lo) / (hi - lo || 1))) * 2,
      k = Math.min(1, Math.floor(t)),
      u = t - k;
    return stops[k].map((c, j) => Math.round(c + (stops[k + 1][j] - c) * u));
  }

  function heatmapURL(matrix, lo, hi) {
    const canvas = document.createElement("canvas");
    canvas.width = matrix[0].length;
    canvas.height = matrix.length;
    const context = canvas.getContext("2d"),
      image = context.createImageData(canvas.width, canvas.height);
    matrix.forEach((row, r) =>
      row.forEach((v, c) => {
        image.data.set([...colour(v, lo, hi), 255], 4 * (r * canvas.width + c));
      }),
    );
    context.putImageData(image, 0, 0);
    return canvas.toDataURL();
  }

  const palette = (i, n) => `hsl(${Math.round(220 - 190 * (n > 1 ? i / (n - 1) : 0))} 75% 45%)`; // blue to orange

  // Each view draws the data into the plot area and returns a one-sentence description of it.
  const views = {
    "pe-heatmap": (plot, f, s, d) => {
      chart(plot, {
        x: [0, s.d_model],
        y: [0, f.positions],
        flipY: true,
        xlabel: "dimension",
        ylabel: "position",
      }).image(d.table, -1, 1);
      const longest = 2 * Math.PI * Math.pow(s.base, (s.d_model - 2) / s.d_model);
      return (
        `Encoding of ${f.positions} positions with d_model ${s.d_model} and base ${s.base}: ` +
        `${s.d_model / 2} sine-cosine pairs, wavelengths from 6.28 to ${fmt(longest)} positions (blue -1, white 0, red +1).`
      );
    },

    wavelengths: (plot, f, s, d) => {
      const top = chart(plot, {
        x: [0, s.d_model / 2],
        y: [1, Math.max(10, ...d.wavelengths) * 1.2],
        logY: true,
        height: 240,
        xlabel: "pair i",
        ylabel: "wavelength",
      });
      d.wavelengths.forEach((w, i) => top.dot(i, w, 2, { class: "explorable__series" }));
      top.dot(d.pair, d.wavelengths[d.pair], 6, { class: "explorable__highlight" });
      const bottom = chart(plot, {
        x: [0, f.positions - 1],
        y: [-1.1, 1.1],
        height: 200,
        xlabel: "position",
        ylabel: `column ${2 * d.pair}`,
      });
      bottom.line(range(f.positions), d.column, { class: "explorable__highlight-line" });
      return (
        `Pair ${d.pair} (columns ${2 * d.pair} and ${2 * d.pair + 1}) has wavelength ${fmt(d.wavelengths[d.pair])} positions ` +
        `and completes ${fmt(f.positions / d.wavelengths[d.pair])} cycles over ${f.positions} positions; ` +
        `consecutive wavelengths grow by the factor ${fmt(Math.pow(s.base, 2 / s.d_model), 5)}.`
      );
    },

    "pair-rotation": (plot, f, s, d) => {
      const c = chart(plot, {
        x: [-1.25, 1.25],
        y: [-1.25, 1.25],
        width: 320,
        equal: true,
        xlabel: `cos (column ${2 * s.pair + 1})`,
        ylabel: `sin (column ${2 * s.pair})`,
      });
      c.line(
        range(121).map((t) => Math.cos((t * Math.PI) / 60)),
        range(121).map((t) => Math.sin((t * Math.PI) / 60)),
        { class: "explorable__guide" },
      );
      const trail = encoding(s.offset + 1, f.d_model, f.default_base, s.position).map((row) => [
        row[2 * s.pair],
        row[2 * s.pair + 1],
      ]);
      c.line(
        trail.map((p) => p[1]),
        trail.map((p) => p[0]),
        { class: "explorable__trail" },
      );
      c.dot(d.start[1], d.start[0], 6, { class: "explorable__series" });
      c.dot(d.target[1], d.target[0], 6, { class: "explorable__highlight" });
      c.dot(d.rotated[1], d.rotated[0], 3, { class: "explorable__mark" });
      return (
        `Pair ${s.pair} at position ${s.position} (blue) turned by M_k through the angle ω_i·k = ${fmt(d.angle)} rad ` +
        `lands on position ${s.position + s.offset} (red). Largest reconstruction error ||M_k PE_pos − PE_pos+k|| ` +
        `over all ${f.positions} positions and ${f.d_model} columns: ${d.error.toExponential(1)}.`
      );
    },

    "dot-distance": (plot, f, s, d) => {
      const scaled = d.dot.map((v) => v / (s.d_model / 2));
      const c = chart(plot, {
        x: [0, f.max_distance],
        y: [Math.min(-0.1, ...scaled), 1],
        xlabel: "distance k",
        ylabel: "PE₀·PE_k / (d/2)",
      });
      c.line([0, f.max_distance], [0, 0], { class: "explorable__guide" });
      c.line(range(scaled.length), scaled, { class: "explorable__highlight-line" });
      const lowest = scaled.indexOf(Math.min(...scaled)),
        rise = scaled.findIndex((v, k) => k > 0 && v > scaled[k - 1]);
      return (
        `PE₀·PE_k divided by d/2 = ${s.d_model / 2}, for base ${s.base}: lowest ${fmt(scaled[lowest])} at k = ${lowest}` +
        (rise > 0 ? `; not monotone, it first rises at k = ${rise}.` : ".")
      );
    },

    "rope-shift": (plot, f, s, d) => {
      const bound = Math.max(...d.scores.flat().map(Math.abs));
      chart(plot, {
        x: [0, f.positions],
        y: [0, f.positions],
        flipY: true,
        width: 360,
        height: 340,
        xlabel: `key position n − ${s.shift}`,
        ylabel: `query position m − ${s.shift}`,
      }).image(d.scores, -bound, bound);
      const spread = Math.max(
        ...range(2 * f.positions - 1, 1 - f.positions).map((o) => {
          const diagonal = range(f.positions)
            .filter((m) => m + o >= 0 && m + o < f.positions)
            .map((m) => d.scores[m][m + o]);
          return Math.max(...diagonal) - Math.min(...diagonal);
        }),
      );
      return (
        `RoPE scores of one query and one key vector at positions ${s.shift} to ${s.shift + f.positions - 1} ` +
        `(blue negative, red positive): every diagonal n − m is constant (largest spread ${spread.toExponential(1)}) ` +
        `and the picture does not change as the shift grows.`
      );
    },

    "alibi-heads": (plot, f, s, d) => {
      const lowest = Math.min(...d.row.flat(), -0.01);
      const c = chart(plot, {
        x: [0, f.positions - 1],
        y: [lowest * 1.05, 0.05 * -lowest],
        xlabel: "key position j",
        ylabel: `bias for query ${Math.min(s.query, f.positions - 1)}`,
      });
      d.row.forEach((row, h) =>
        c.line(range(f.positions), row, { stroke: palette(h, s.heads), class: "explorable__head" }),
      );
      return (
        `ALiBi bias −s_h·|i − j| for ${s.heads} head${s.heads > 1 ? "s" : ""} (steepest blue, flattest orange); ` +
        `slopes ${d.slopes.map((x) => fmt(x, 3)).join(", ")}.`
      );
    },

    "order-sensitivity": (plot, f, s, d) => {
      const L = d.with_pe.length,
        top = Math.max(...d.with_pe, ...d.without_pe, 1e-3) * 1.1;
      const c = chart(plot, {
        x: [-0.5, L - 0.5],
        y: [0, top],
        xlabel: "token t of the rotated sentence",
        ylabel: "‖difference‖",
      });
      const bar = (t, v, shift, cls) =>
        el(c.layer, "rect", {
          x: c.sx(t + shift - 0.18),
          width: c.sx(0.36) - c.sx(0),
          y: c.sy(v),
          height: c.sy(0) - c.sy(v),
          class: cls,
        });
      d.with_pe.forEach((v, t) => bar(t, v, -0.2, "explorable__bar-with"));
      d.without_pe.forEach((v, t) => bar(t, v, 0.2, "explorable__bar-without"));
      const sentence = d.permutation.map((t) => f.vocab[f.ids[t]]).join(" ");
      return (
        `"${sentence}": largest difference between the outputs of the rotated sentence and the rotated outputs is ` +
        `${fmt(Math.max(...d.with_pe))} with the encoding scaled by ${s.scale} (dark bars) and ` +
        `${Math.max(...d.without_pe).toExponential(1)} without it (light bars, rounding only).`
      );
    },

    "stretched-angles": (plot, f, s, d) => {
      const pairs = d.trained.length;
      // Fixed axes, so that the lines move with the scale: from below the slowest trained angle to two decades above
      // the fastest pair at the largest scale (room for the key).
      const y = [Math.min(...d.trained) / 3, f.controls.scale.max * Math.max(...d.trained) * 100];
      const c = chart(plot, {
        x: [-0.5, pairs - 0.5],
        y,
        logY: true,
        height: 340,
        xlabel: "pair i (fast to slow)",
        ylabel: "largest angle (radians)",
      });
      const arc = d.trained.findIndex((t) => t < 2 * Math.PI); // first pair that sees only an arc in training
      if (arc >= 0) {
        el(c.layer, "rect", {
          x: c.sx(arc - 0.5),
          width: c.sx(pairs - 0.5) - c.sx(arc - 0.5),
          y: c.sy(y[1]),
          height: c.sy(y[0]) - c.sy(y[1]),
          class: "explorable__shade",
        });
      }
      const xs = range(pairs);
      c.line([-0.5, pairs - 0.5], [2 * Math.PI, 2 * Math.PI], { class: "explorable__guide", "stroke-dasharray": "5 4" });
      el(c.layer, "text", { x: c.sx(0), y: c.sy(2 * Math.PI) - 5 }, "one turn, 2π");
      c.line(xs, d.trained, { class: "explorable__trained" });
      c.line(xs, d.before, { class: "explorable__before" });
      c.line(xs, d.after, { class: "explorable__after" });
      d.unseen.forEach((u, i) => u && c.dot(i, d.after[i], 3.5, { class: "explorable__unseen" }));
      legend(c, [
        ["explorable__trained", `in training, at ${f.train_len}`],
        ["explorable__before", `no change, at ${s.scale * f.train_len}`],
        ["explorable__after", `${s.method}, at ${s.scale * f.train_len}`],
        ["explorable__unseen", "beyond its trained angle", true],
      ]);
      const unseen = xs.filter((i) => d.unseen[i]),
        arcPairs = arc >= 0 ? pairs - arc : 0;
      const temperature =
        s.method === "YaRN" ? ` Queries and keys are also multiplied by ${fmt(d.attention_scale, 4)}.` : "";
      return (
        `${s.method} at s = ${s.scale}, from ${f.train_len} to ${s.scale * f.train_len} tokens: ` +
        `${arcPairs} of ${pairs} pairs (shaded) see less than a full turn in training; ` +
        (unseen.length
          ? `${unseen.length} of them pass the largest angle they saw (red dots: ${spans(unseen)}).`
          : "none of them passes the largest angle it saw.") +
        ` Pair 0 turns ${fmt(d.frequencies[0], 4)} rad per token (1 before).${temperature}`
      );
    },
  };

  /** A key in the chart's top right corner: a line sample (or a dot) of each class and its text. */
  function legend(c, entries) {
    const box = c.svg.viewBox.baseVal,
      right = box.width - 24;
    entries.forEach(([cls, text, isDot], k) => {
      const y = 30 + 18 * k;
      if (isDot) el(c.layer, "circle", { cx: right - 11, cy: y - 4, r: 3.5, class: cls });
      else el(c.layer, "path", { d: `M${right - 22},${y - 4}h22`, class: cls, fill: "none" });
      el(c.layer, "text", { x: right - 28, y, "text-anchor": "end" }, text);
    });
  }

  /** Whole numbers as runs: [3, 4, 5, 9] -> "3-5, 9". */
  function spans(values) {
    const runs = [];
    values.forEach((v) => {
      const last = runs[runs.length - 1];
      if (last && v === last[1] + 1) last[1] = v;
      else runs.push([v, v]);
    });
    return runs.map(([a, b]) => (a === b ? `${a}` : `${a}–${b}`)).join(", ");
  }

  // ---------------------------------------------------------------------- wiring a figure
  /** Figures whose control ranges depend on other settings: tighten them before reading. */
  const limits = {
    wavelengths: (inputs, s) => {
      inputs.pair.max = String(s.d_model / 2 - 1);
    },
  };

  function settingsOf(f, inputs) {
    const s = {};
    for (const [key, control] of Object.entries(f.controls)) {
      s[key] = control.choices ? control.choices[Number(inputs[key].value)] : Number(inputs[key].value);
    }
    return s;
  }

  const plain = (value) => (Array.isArray(value) ? value.map(plain) : value);

  function mount(figure) {
    const f = JSON.parse(figure.querySelector(".explorable__settings").textContent);
    const plot = figure.querySelector(".explorable__plot"),
      readout = figure.querySelector(".explorable__readout");
    const inputs = {};
    figure.querySelectorAll(".explorable__controls input").forEach((input) => {
      inputs[input.name] = input;
    });
    let current = null;
    function update() {
      let s = settingsOf(f, inputs);
      if (limits[f.name]) {
        limits[f.name](inputs, s);
        s = settingsOf(f, inputs);
      }
      for (const [key, input] of Object.entries(inputs)) {
        const shown = String(s[key]);
        input.parentElement.querySelector("output").textContent = shown;
        if (f.controls[key].choices) input.setAttribute("aria-valuetext", shown);
      }
      current = { settings: s, data: compute[f.name](f, s) };
      plot.replaceChildren();
      const description = views[f.name](plot, f, s, current.data);
      readout.textContent = description;
      plot.setAttribute("aria-label", `${f.title}. ${description}`);
    }
    Object.values(inputs).forEach((input) => input.addEventListener("input", update));
    let shownWidth = plot.clientWidth;
    window.addEventListener("resize", () => {
      // redraw for the new width (text size), not on every event
      if (plot.clientWidth !== shownWidth) {
        shownWidth = plot.clientWidth;
        requestAnimationFrame(update);
      }
    });
    update();
    figure.classList.add("explorable--live");
    window.posencExplorables[f.name] = {
      element: figure,
      settings: () => ({ ...current.settings }),
      data: () => Object.fromEntries(Object.entries(current.data).map(([k, v]) => [k, plain(v)])),
    };
  }

  window.posencExplorables = window.posencExplorables || {};
  function start() {
    document.querySelectorAll(".explorable").forEach((figure) => {
      try {
        mount(figure);
      } catch (error) {
        console.error(`explorable ${figure.id}:`, error);
      }
    });
  }
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", start);
  else start();
})();
