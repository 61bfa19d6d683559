/**
 * The fixed parts of the HTML page: its style sheet and its one script, with
 * their SHA-256 hashes for the Content-Security-Policy.
 *
 * Both are constants, so their hashes are too: the policy allows exactly this
 * style and this script and nothing else, which is what stops injected markup
 * from running even if escaping ever failed (`'unsafe-inline'` would not stop an
 * injected `onerror`). `test/html.test.ts` recomputes both hashes from the text
 * the page really holds and fails when they differ, so an edit to either
 * constant without its hash cannot pass.
 *
 * The script only shows, hides and highlights what the renderer laid out: each
 * tree row names its parent's row (`data-p`), so selecting a row shows the
 * transcript cards of its root-to-entry path. It reads no message content and
 * writes only text it copies from the page (`textContent`).
 */

/** Rows deeper than this many branch levels are drawn at this indentation. */
export const MAX_LEVEL = 16

const levels = Array.from({ length: MAX_LEVEL + 1 }, (_, l) => `.l${l}{--l:${l}}`).join("")

export const STYLE = `
:root{color-scheme:light;--u:#1d4ed8;--a:#047857;--t:#b45309;--e:#dc2626;--line:#d0d7de;--muted:#57606a;--sel:#e7f0ff;--cur:#cfe0ff;--act:#1d4ed8}
*{box-sizing:border-box}
html,body{height:100%}
body{margin:0;display:flex;flex-direction:column;font:14px/1.45 system-ui,-apple-system,"Segoe UI","Liberation Sans",Arial,sans-serif;color:#1f2328;background:#f6f8fa}
.mono,.id,.tn,.cid,pre,.k{font-family:ui-monospace,"SFMono-Regular","Liberation Mono",Menlo,Consolas,monospace}
.id,.tn,.cid,.ts{unicode-bidi:isolate}
header.top{flex:none;padding:12px 20px 10px;background:#fff;border-bottom:1px solid var(--line)}
h1{font-size:18px;line-height:1.3;margin:0 0 6px;overflow-wrap:anywhere;display:-webkit-box;-webkit-box-orient:vertical;-webkit-line-clamp:2;overflow:hidden}
.facts{display:flex;flex-wrap:wrap;gap:2px 20px;margin:0;font-size:13px;color:var(--muted)}
.facts div{display:flex;gap:6px;min-width:0}
.facts dt{font-weight:600;color:#1f2328}
.facts dd{margin:0;overflow-wrap:anywhere;display:-webkit-box;-webkit-box-orient:vertical;-webkit-line-clamp:2;overflow:hidden}
.legend{display:flex;flex-wrap:wrap;gap:12px;align-items:center;margin-top:8px;font-size:12px;color:var(--muted)}
.legend .k{margin-right:2px}
button{font:inherit;color:inherit}
.btn{border:1px solid var(--line);background:#f6f8fa;border-radius:6px;padding:2px 10px;cursor:pointer}
.btn:hover{background:#eef1f4}
main{flex:1;min-height:0;display:grid;grid-template-columns:minmax(300px,40%) minmax(0,1fr)}
.pane{min-height:0;overflow:auto;scroll-padding-top:48px}
#tree{background:#fff;border-right:1px solid var(--line);padding:0 0 24px}
#panel{padding:0 20px 40px}
.pane h2{position:sticky;top:0;z-index:1;font-size:13px;font-weight:600;color:var(--muted);margin:0}
#tree h2{padding:10px 12px 6px;background:#fff}
#panel h2{padding:12px 0 10px;background:#f6f8fa}
.row{display:flex;align-items:center;gap:6px;width:100%;border:0;background:none;text-align:left;cursor:pointer;padding:3px 12px 3px calc(12px + var(--l,0) * 18px);white-space:nowrap;line-height:1.5;border-left:3px solid transparent}
.row:not(.l0){background-image:linear-gradient(var(--line),var(--line));background-repeat:no-repeat;background-size:1px 100%;background-position:calc(17px + (var(--l) - 1) * 18px) 0}
.row:hover{background-color:#f3f4f6}
.row:focus-visible{outline:2px solid var(--act);outline-offset:-2px}
.row.act{border-left-color:var(--act)}
.row.sel{background-color:var(--sel)}
.row.cur{background-color:var(--cur)}
.row::before{content:"\\25CB";flex:none;width:12px;color:#8c959f;font-size:10px}
.row.act::before{content:"\\25CF";color:var(--act)}
.row .id{flex:none;max-width:16ch;overflow:hidden;text-overflow:ellipsis;font-size:11px;color:var(--muted)}
.row .pv{flex:1;min-width:0;overflow:hidden;text-overflow:ellipsis}
.row .br{flex:none;color:var(--muted);font-size:12px}
.row.side{margin-top:2px}
.row.root2{border-top:1px dashed var(--line);margin-top:6px}
.k{flex:none;display:inline-flex;align-items:center;justify-content:center;box-sizing:border-box;min-width:70px;height:18px;font-size:11px;font-weight:600;line-height:1;padding:0 6px;border-radius:4px;color:#fff;background:var(--c)}
.u{--c:var(--u)}.a{--c:var(--a)}.t{--c:var(--t)}.t.e{--c:var(--e)}
.chip{flex:none;max-width:22ch;overflow:hidden;text-overflow:ellipsis;font-size:11px;line-height:16px;border:1px solid var(--line);border-radius:9px;padding:0 7px;color:#1f2328;background:#f6f8fa;font-family:ui-monospace,"Liberation Mono",monospace}
.chip.err{border-color:#ffb1b1;background:#ffebe9;color:var(--e)}
details.run>summary{list-style:none;cursor:pointer;font-size:12px;color:var(--muted);padding:2px 12px 2px calc(30px + var(--l,0) * 18px);border-left:3px solid transparent;white-space:nowrap;overflow:hidden;text-overflow:ellipsis}
details.run>summary::-webkit-details-marker{display:none}
details.run>summary::before{content:"\\25B8  "}
details.run[open]>summary::before{content:"\\25BE  "}
details.run.act>summary{border-left-color:var(--act)}
details.run:not(.l0)>summary{background-image:linear-gradient(var(--line),var(--line));background-repeat:no-repeat;background-size:1px 100%;background-position:calc(17px + (var(--l) - 1) * 18px) 0}
details.run>summary:hover{background:#f3f4f6}
.msg{display:none;background:#fff;border:1px solid var(--line);border-left:4px solid var(--c);border-radius:6px;margin:0 0 10px;padding:8px 12px 10px;content-visibility:auto;contain-intrinsic-size:auto 110px}
.msg.on{display:block}
.msg.cur{box-shadow:0 0 0 2px var(--cur)}
.mh{display:flex;flex-wrap:wrap;align-items:baseline;gap:4px 10px;font-size:12px;color:var(--muted)}
.mh .id{color:#1f2328}
.mid::before{content:"message ";font-family:system-ui,"Liberation Sans",sans-serif}
.mid{font-family:ui-monospace,"Liberation Mono",monospace;unicode-bidi:isolate}
.tx{margin:6px 0 0;white-space:pre-wrap;overflow-wrap:anywhere;unicode-bidi:plaintext;font:inherit}
.t .tx,.args{font:12.5px/1.5 ui-monospace,"Liberation Mono",Menlo,Consolas,monospace}
.empty{color:var(--muted);font-style:italic;margin:6px 0 0}
.call{margin-top:8px;border:1px solid var(--line);border-radius:6px;background:#f6f8fa;padding:6px 10px}
.ch{display:flex;flex-wrap:wrap;align-items:baseline;gap:4px 10px;font-size:12px;color:var(--muted)}
.ch .tn,.link .tn{font-weight:600;color:#1f2328}
.args{margin:4px 0 0;white-space:pre-wrap;overflow-wrap:anywhere}
.link{margin-top:4px;font-size:12px;color:var(--muted)}
.go{border:0;background:none;padding:0;color:#0969da;cursor:pointer;text-decoration:underline;font-size:inherit}
.status{font-size:11px;font-weight:600;border-radius:10px;padding:0 8px;background:#dafbe1;color:#116329}
.status.err{background:#ffebe9;color:var(--e)}
details.long>summary{cursor:pointer;list-style:none}
details.long>summary::-webkit-details-marker{display:none}
details.long>summary .more{display:block;margin-top:4px;font-size:12px;color:#0969da}
details.long[open]>summary .tx{display:none}
details.long[open]>summary .more::before{content:"Hide \\2014  "}
.flash{animation:flash 1.4s ease-out}
@keyframes flash{from{background:#fff3b0}}
@media (max-width:820px){main{grid-template-columns:minmax(0,1fr);grid-template-rows:45% 55%}#tree{border-right:0;border-bottom:1px solid var(--line)}}
${levels}
`

/**
 * The style sheet of a version-2 page: the version-1 sheet (unchanged, so
 * version-1 pages keep their bytes and hash) and the rules of what only version
 * 2 holds: its other kinds of entry, labels, reasoning, files and images, meta.
 */
export const STYLE_V2 = `${STYLE}
:root{--s:#6e40c9;--cp:#0e7490;--lb:#9a6700;--ti:#1f6feb;--md:#57606a;--cu:#8250df}
.s{--c:var(--s)}.cp{--c:var(--cp)}.lb{--c:var(--lb)}.ti{--c:var(--ti)}.md{--c:var(--md)}.cu{--c:var(--cu)}
.chip.lbl,.mh .lbl,.link .lbl{border:1px solid #d4a72c;border-radius:9px;padding:0 7px;background:#fff8c5;color:#633c01;font-size:11px;line-height:16px;max-width:30ch;overflow:hidden;text-overflow:ellipsis;white-space:nowrap;unicode-bidi:isolate}
.meta{display:flex;flex-wrap:wrap;align-items:baseline;gap:2px 8px;margin-top:6px;font-size:12px;color:var(--muted)}
.meta .tn,.meta .cid{color:#1f2328;unicode-bidi:isolate;overflow-wrap:anywhere}
.opt{margin-top:4px;font-size:12px;color:var(--muted)}
details.rs{margin-top:8px;border:1px dashed var(--line);border-radius:6px;padding:4px 10px;background:#fbfbfc}
details.rs>summary{cursor:pointer;font-size:12px;color:var(--muted)}
details.rs>.tx,details.rs>details.long{font-style:italic;color:#424a53}
.file{margin-top:8px;border:1px solid var(--line);border-radius:6px;padding:6px 10px}
.file .fd{margin-top:4px;font-size:12px;overflow-wrap:anywhere}
.img{display:block;max-width:100%;max-height:320px;image-rendering:auto;border:1px solid var(--line);background:#fff}
.url{font-family:ui-monospace,"Liberation Mono",monospace;unicode-bidi:isolate}
`

export const SCRIPT = `
(function () {
  "use strict";
  var d = document;
  var tree = d.getElementById("tree");
  var panel = d.getElementById("panel");
  var total = Number(tree.getAttribute("data-n"));
  var leaf = Number(tree.getAttribute("data-leaf"));
  var rows = null;
  var path = [];
  var current = -1;
  function row(i) { return d.getElementById("r" + i); }
  function card(i) { return d.getElementById("m" + i); }
  function pathOf(i) {
    var p = [];
    for (var n = i; n >= 0 && p.length <= total;) {
      var r = row(n);
      if (r === null) break;
      p.push(n);
      n = Number(r.getAttribute("data-p"));
    }
    return p.reverse();
  }
  function mark(on) {
    for (var k = 0; k < path.length; k++) {
      row(path[k]).classList.toggle("sel", on);
      card(path[k]).classList.toggle("on", on);
    }
    if (current >= 0) {
      row(current).classList.toggle("cur", on);
      card(current).classList.toggle("cur", on);
      if (on) row(current).setAttribute("aria-current", "true");
      else row(current).removeAttribute("aria-current");
    }
  }
  function select(i, reveal) {
    mark(false);
    current = i;
    path = i >= 0 ? pathOf(i) : [];
    mark(true);
    d.getElementById("pk").textContent = i === leaf ? "Active path" : "Path";
    d.getElementById("pid").textContent = i >= 0 ? row(i).querySelector(".id").textContent : "";
    d.getElementById("pn").textContent = path.length + (path.length === 1 ? " entry" : " entries");
    if (i < 0) return;
    if (reveal) {
      var run = row(i).closest("details.run");
      if (run !== null) run.open = true;
      row(i).scrollIntoView({ block: "nearest" });
    }
    card(i).scrollIntoView({ block: "nearest" });
  }
  function flash(el) {
    el.classList.remove("flash");
    void el.offsetWidth;
    el.classList.add("flash");
    el.scrollIntoView({ block: "nearest" });
  }
  function visible(el) {
    return typeof el.checkVisibility === "function" ? el.checkVisibility() : el.offsetParent !== null;
  }
  tree.addEventListener("click", function (e) {
    var b = e.target.closest(".row");
    if (b !== null) select(Number(b.id.slice(1)), false);
  });
  tree.addEventListener("keydown", function (e) {
    var b = e.target.closest(".row");
    if (b === null) return;
    var step = e.key === "ArrowDown" ? 1 : e.key === "ArrowUp" ? -1 : e.key === "Home" ? -total : e.key === "End" ? total : 0;
    if (step === 0) return;
    e.preventDefault();
    if (rows === null) rows = Array.prototype.slice.call(tree.querySelectorAll(".row"));
    var at = rows.indexOf(b);
    var dir = step > 0 ? 1 : -1;
    var next = -1;
    if (Math.abs(step) === 1) {
      for (var k = at + dir; k >= 0 && k < rows.length; k += dir) if (visible(rows[k])) { next = k; break; }
    } else {
      for (var j = dir > 0 ? rows.length - 1 : 0; j >= 0 && j < rows.length; j -= dir) if (visible(rows[j])) { next = j; break; }
    }
    if (next < 0) return;
    rows[next].focus();
    select(Number(rows[next].id.slice(1)), false);
  });
  panel.addEventListener("click", function (e) {
    var b = e.target.closest(".go");
    if (b === null) return;
    var to = b.getAttribute("data-to");
    if (to !== null) {
      var el = d.getElementById(to);
      if (el !== null) flash(el);
      return;
    }
    var n = Number(b.getAttribute("data-go"));
    if (card(n) === null) return;
    if (!card(n).classList.contains("on")) select(n, true);
    flash(card(n));
  });
  d.getElementById("toleaf").addEventListener("click", function () { select(leaf, true); });
  current = leaf;
  path = leaf >= 0 ? pathOf(leaf) : [];
  d.documentElement.setAttribute("data-ready", "1");
})();
`

/** `'sha256-…'` of STYLE, checked against the page's own text by test/html.test.ts. */
export const STYLE_HASH = "sha256-INeXKKrY2Vg0AGq6kPoROCdjvqNzB/56hLgYQof9T28="
/** `'sha256-…'` of STYLE_V2, checked against the page's own text by test/html-v2.test.ts. */
export const STYLE_V2_HASH = "sha256-8smJcNUt2WyU6yqeGAg5nQ3gJlRQB6Ti2J1RhyQmv/Q="
/** `'sha256-…'` of SCRIPT, checked against the page's own text by test/html.test.ts. */
export const SCRIPT_HASH = "sha256-tB7Key4uXqJNQdcT5zhMTkal5OTX4DzOs5VoCu0VhQQ="
