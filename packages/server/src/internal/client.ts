/**
 * What the browser runs and draws: one style sheet (the HTML view's, then the
 * server's own rules) and one script for every page, both constants, so the
 * Content-Security-Policy allows exactly them by hash and nothing else: no
 * inline handler, no other script or style, no request beyond this server.
 *
 * The script reads no session content: it moves parts the server laid out and
 * escaped (rows, cards, table rows) into the page, marks the selected path, and
 * asks the server for more (a folded run, a path, a window of cards, what
 * changed) with `fetch` and `EventSource`, same origin only.
 */
import * as HtmlParts from "@session-tree/view/HtmlParts"
import { createHash } from "node:crypto"

const SERVER_STYLE = `
header.site{flex:none;display:flex;flex-wrap:wrap;align-items:center;gap:8px 18px;padding:8px 20px;background:#24292f;color:#fff;font-size:14px}
header.site a{color:#fff;text-decoration:none;font-weight:600}
header.site a:hover{text-decoration:underline}
header.site form{display:flex;gap:6px;flex:1;min-width:240px;max-width:560px}
header.site input{flex:1;min-width:0;font:inherit;padding:3px 8px;border-radius:6px;border:1px solid #57606a}
header.site button{font:inherit;padding:3px 12px;border-radius:6px;border:1px solid #57606a;background:#f6f8fa;color:#1f2328;cursor:pointer}
.live{margin-left:auto;font-size:12px;color:#afb8c1}
.live.on::before{content:"\\25CF  ";color:#3fb950}
.live.off::before{content:"\\25CB  ";color:#f85149}
main.doc{display:block;flex:1;min-height:0;overflow:auto;padding:16px 20px 40px}
main.doc h1{font-size:20px;display:block;-webkit-line-clamp:unset}
.bar{display:flex;flex-wrap:wrap;align-items:center;gap:8px 14px;margin:8px 0 12px;font-size:13px;color:var(--muted)}
.bar form{display:flex;flex-wrap:wrap;gap:6px;align-items:center}
.bar input,.bar select{font:inherit;padding:2px 6px;border:1px solid var(--line);border-radius:6px;background:#fff}
.bar a,.pager a,td a,.hit a{color:#0969da}
table.sessions{width:100%;border-collapse:collapse;background:#fff;border:1px solid var(--line);font-size:13px}
table.sessions th{position:sticky;top:-16px;background:#f6f8fa;text-align:left;font-weight:600;padding:6px 10px;border-bottom:1px solid var(--line);white-space:nowrap}
table.sessions td{padding:5px 10px;border-bottom:1px solid #eaeef2;vertical-align:top}
table.sessions td.n,table.sessions th.n{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}
table.sessions td.t{max-width:48ch;overflow-wrap:anywhere}
table.sessions td.m{max-width:28ch;overflow-wrap:anywhere;color:var(--muted)}
table.sessions tr.bad td{background:#fff8f7}
table.sessions tr.fresh td{animation:flash 1.4s ease-out}
.err{color:var(--e);font-weight:600}
.loc{font-family:ui-monospace,"Liberation Mono",monospace;font-size:12px;color:var(--muted);overflow-wrap:anywhere}
.pager{display:flex;gap:14px;align-items:center;margin:12px 0;font-size:13px;color:var(--muted)}
.totals{font-size:13px;color:var(--muted);margin:0 0 10px}
.hits{list-style:none;padding:0;margin:0}
.hit{background:#fff;border:1px solid var(--line);border-left:4px solid var(--c,var(--line));border-radius:6px;margin:0 0 10px;padding:8px 12px}
.hit .hh{display:flex;flex-wrap:wrap;gap:4px 10px;align-items:baseline;font-size:12px;color:var(--muted)}
.hit .hh a{font-weight:600;font-size:14px}
.hit .sn{margin:6px 0 0;white-space:pre-wrap;overflow-wrap:anywhere;font:12.5px/1.5 ui-monospace,"Liberation Mono",Menlo,Consolas,monospace}
mark{background:#fff3b0;color:inherit;border-radius:2px;padding:0 1px}
.links{display:flex;flex-wrap:wrap;gap:4px 16px;margin-top:6px;font-size:13px;color:var(--muted)}
.links a{color:#0969da}
#panel .msg{display:block}
#panel .msg.cur{box-shadow:0 0 0 2px var(--cur)}
.more{margin:0 0 10px;text-align:center}
.notice{margin:0 0 10px;padding:6px 10px;border:1px solid #d4a72c;background:#fff8c5;border-radius:6px;font-size:13px}
.empty-list{padding:24px;text-align:center;color:var(--muted)}
details.run.loading>summary::after{content:"  loading\\2026"}
`

/** The one style sheet of every page. */
export const STYLE = `${HtmlParts.STYLE}${SERVER_STYLE}`

export const SCRIPT = `
(function () {
  "use strict";
  var d = document;
  var body = d.body;
  var live = d.getElementById("live");
  function json(url) {
    return fetch(url, { credentials: "same-origin", headers: { accept: "application/json" } }).then(function (r) {
      if (!r.ok) throw new Error("HTTP " + r.status);
      return r.json();
    });
  }
  function text(url) {
    return fetch(url, { credentials: "same-origin" }).then(function (r) {
      if (!r.ok) throw new Error("HTTP " + r.status);
      return r.text();
    });
  }
  function follow(query, onChange) {
    if (typeof EventSource !== "function") return;
    var source = new EventSource("/events" + query);
    source.addEventListener("open", function () { if (live !== null) { live.textContent = "live"; live.className = "live on"; } });
    source.addEventListener("error", function () { if (live !== null) { live.textContent = "reconnecting"; live.className = "live off"; } });
    source.addEventListener("change", function (e) { onChange(JSON.parse(e.data)); });
  }
  var page = body.getAttribute("data-page");

  // ---- The list: the same page of rows again when anything changed, the reader's scroll kept.
  if (page === "list") {
    var pending = false;
    follow("", function () {
      if (pending) return;
      pending = true;
      var sep = location.search === "" ? "?" : "&";
      text(location.pathname + location.search + sep + "fragment=1").then(function (html) {
        pending = false;
        var rows = d.getElementById("rows");
        var scroller = d.querySelector("main.doc");
        var top = scroller === null ? 0 : scroller.scrollTop;
        var before = {};
        Array.prototype.forEach.call(rows.querySelectorAll("tr[data-v]"), function (tr) { before[tr.getAttribute("data-k")] = tr.getAttribute("data-v"); });
        var t = d.createElement("template");
        t.innerHTML = html;
        var fresh = t.content.querySelector("tbody");
        var totals = t.content.querySelector(".totals");
        if (fresh === null) return;
        rows.replaceChildren.apply(rows, Array.prototype.slice.call(fresh.childNodes));
        if (totals !== null) { var mine = d.querySelector(".totals"); if (mine !== null) mine.replaceWith(totals); }
        Array.prototype.forEach.call(rows.querySelectorAll("tr[data-v]"), function (tr) {
          if (before[tr.getAttribute("data-k")] !== tr.getAttribute("data-v")) tr.classList.add("fresh");
        });
        if (scroller !== null) scroller.scrollTop = top;
      }, function () { pending = false; });
    });
    return;
  }
  if (page !== "session") return;

  // ---- A session: the tree beside the selected path, parts loaded from the server.
  var main = d.getElementById("session");
  var tree = d.getElementById("tree");
  var panel = d.getElementById("panel");
  var cards = d.getElementById("cards");
  var earlier = d.getElementById("earlier");
  var later = d.getElementById("later");
  var notice = d.getElementById("notice");
  var key = main.getAttribute("data-key");
  var base = "/s/" + encodeURIComponent(key);
  var version = main.getAttribute("data-version");
  var n = Number(main.getAttribute("data-n"));
  var leaf = Number(main.getAttribute("data-leaf"));
  var leafId = main.getAttribute("data-leaf-id") || "";
  var path = ranges(main.getAttribute("data-path"));
  var from = Number(main.getAttribute("data-from"));
  var to = Number(main.getAttribute("data-to"));
  var busy = false;
  // A large session opened cold comes with its first screen only: its tree and facts are asked for at once.
  var rest = main.getAttribute("data-rest") === "later";

  // A path is kept as the ranges the server sends (a linear path of 100,000 entries is one), never expanded.
  function ranges(s) {
    var out = [];
    if (s === null || s === "") return out;
    s.split(",").forEach(function (r) {
      var ab = r.split("-");
      out.push([Number(ab[0]), ab.length > 1 ? Number(ab[1]) : Number(ab[0])]);
    });
    return out;
  }
  function length(p) {
    var n = 0;
    for (var k = 0; k < p.length; k++) n += p[k][1] - p[k][0] + 1;
    return n;
  }
  function has(p, i) {
    for (var k = 0; k < p.length; k++) if (i >= p[k][0] && i <= p[k][1]) return true;
    return false;
  }
  function row(i) { return d.getElementById("r" + i); }
  function card(i) { return d.getElementById("m" + i); }
  function mark() {
    // Only the rows on the page are looked at: a path of 100,000 entries is mostly folded away.
    Array.prototype.forEach.call(tree.querySelectorAll(".row"), function (r) {
      var i = Number(r.id.slice(1));
      var on = has(path, i);
      r.classList.toggle("sel", on);
      r.classList.toggle("act", on);
      r.classList.toggle("cur", i === leaf);
      if (i === leaf) r.setAttribute("aria-current", "true");
      else r.removeAttribute("aria-current");
    });
    // A folded run is a chain of only children: the path goes through it when it holds its first entry.
    Array.prototype.forEach.call(tree.querySelectorAll("details.run[data-run]"), function (run) {
      run.classList.toggle("act", has(path, Number(run.getAttribute("data-run"))));
    });
    d.getElementById("pid").textContent = leafId;
    d.getElementById("pk").textContent = leaf === n - 1 ? "Path to the newest entry," : "Path to";
    var total = length(path);
    d.getElementById("pn").textContent = total + (total === 1 ? " entry" : " entries");
    earlier.hidden = from <= 0;
    if (!earlier.hidden) earlier.querySelector("button").textContent = "Show " + Math.min(from, 200) + " earlier of " + from;
    later.hidden = to >= total;
    if (!later.hidden) later.querySelector("button").textContent = "Show " + Math.min(total - to, 200) + " later of " + (total - to);
  }
  function applyPath(data, scrollTo) {
    version = data.version || version;
    path = ranges(data.path);
    leaf = data.leaf;
    leafId = data.leafId;
    from = data.from;
    to = data.to;
    cards.innerHTML = data.cards;
    mark();
    if (leafId !== "") {
      var url = new URL(location.href);
      url.searchParams.delete("entry");
      url.searchParams.set("leaf", leafId);
      history.replaceState(null, "", url.pathname + url.search);
    }
    var target = scrollTo >= 0 ? card(scrollTo) : null;
    if (target !== null) flash(target);
    else panel.scrollTop = panel.scrollHeight;
  }
  function select(i, focus) {
    if (busy) return;
    busy = true;
    json(base + "/path?to=" + i + (focus >= 0 ? "&focus=" + focus : "") + "&v=" + encodeURIComponent(version)).then(function (data) {
      busy = false;
      applyPath(data, focus);
    }, function () { busy = false; });
  }
  function flash(el) {
    el.classList.remove("flash");
    void el.offsetWidth;
    el.classList.add("flash");
    el.scrollIntoView({ block: "center" });
  }
  function more(which) {
    if (busy) return;
    busy = true;
    var a = which === "earlier" ? Math.max(0, from - 200) : to;
    var b = which === "earlier" ? from : Math.min(length(path), to + 200);
    json(base + "/cards?to=" + leaf + "&from=" + a + "&until=" + b + "&v=" + encodeURIComponent(version)).then(function (data) {
      busy = false;
      if (which === "earlier") {
        var height = panel.scrollHeight;
        var top = panel.scrollTop;
        cards.insertAdjacentHTML("afterbegin", data.cards);
        from = a;
        panel.scrollTop = top + (panel.scrollHeight - height);
      } else {
        cards.insertAdjacentHTML("beforeend", data.cards);
        to = b;
      }
      mark();
    }, function () { busy = false; });
  }
  earlier.querySelector("button").addEventListener("click", function () { more("earlier"); });
  later.querySelector("button").addEventListener("click", function () { more("later"); });
  // A folded run's rows come a page at a time: the first when it is opened, the next on request.
  function loadRun(run, start, left) {
    run.classList.add("loading");
    json(base + "/run?start=" + start + "&n=" + left + "&level=" + run.getAttribute("data-level") + "&v=" + encodeURIComponent(version)).then(function (data) {
      run.classList.remove("loading");
      var more = run.querySelector(":scope > .more");
      if (more !== null) more.remove();
      run.insertAdjacentHTML("beforeend", data.rows);
      var loaded = run.querySelectorAll(":scope > .row").length;
      var rest = Number(run.getAttribute("data-n")) - loaded;
      if (data.next >= 0 && rest > 0) {
        run.insertAdjacentHTML("beforeend", '<div class="more"><button type="button" class="btn"></button></div>');
        var button = run.querySelector(":scope > .more button");
        button.textContent = "Show " + Math.min(rest, 500) + " more of " + rest;
        button.addEventListener("click", function () { loadRun(run, data.next, rest); });
      }
      mark();
    }, function () { run.classList.remove("loading"); run.removeAttribute("data-loaded"); });
  }
  function openRun(run) {
    if (run.getAttribute("data-loaded") === "1") return;
    run.setAttribute("data-loaded", "1");
    loadRun(run, run.getAttribute("data-run"), Number(run.getAttribute("data-n")));
  }
  tree.addEventListener("toggle", function (e) {
    var run = e.target;
    if (run.matches && run.matches("details.run[data-run]") && run.open) openRun(run);
  }, true);
  tree.addEventListener("click", function (e) {
    var b = e.target.closest(".row");
    if (b !== null) select(Number(b.id.slice(1)), -1);
  });
  panel.addEventListener("click", function (e) {
    var b = e.target.closest(".go");
    if (b === null) return;
    var target = b.getAttribute("data-to");
    if (target !== null) {
      var el = d.getElementById(target);
      if (el !== null) flash(el);
      return;
    }
    var i = Number(b.getAttribute("data-go"));
    if (card(i) !== null) flash(card(i));
    else if (has(path, i)) select(leaf, i);
    else select(i, i);
  });
  d.getElementById("toleaf").addEventListener("click", function () { select(n - 1, -1); });

  // ---- Live: what changed, laid into the page without a reload and without moving the reader.
  var updating = false;
  var again = false;
  // The tree's rows as the last answer gave them, and the version they are of: a later answer sends only what changed.
  var rows = null;
  var rowsOf = "";
  function update() {
    if (updating) { again = true; return; }
    updating = true;
    var followEnd = to >= length(path);
    json(base + "/since?v=" + (rest ? "" : encodeURIComponent(version)) + "&r=" + (rows === null ? "" : encodeURIComponent(rowsOf)) + "&n=" + n + "&leaf=" + leaf).then(function (data) {
      updating = false;
      if (data.gone) {
        notice.hidden = false;
        notice.textContent = "This session is no longer there.";
      } else if (data.version !== version || rest) {
        var top = tree.scrollTop;
        var open = {};
        Array.prototype.forEach.call(tree.querySelectorAll("details.run[open]"), function (r) { open[r.getAttribute("data-run")] = true; });
        version = data.version;
        n = data.n;
        main.setAttribute("data-version", version);
        d.getElementById("facts").innerHTML = data.facts;
        d.getElementById("th").textContent = data.treeHeading;
        var h = tree.querySelector("h2");
        tree.replaceChildren(h);
        if (data.treeDelta !== undefined && rows !== null) {
          Array.prototype.splice.apply(rows, [data.treeDelta.at, data.treeDelta.remove].concat(data.treeDelta.rows));
        } else {
          rows = data.rows;
        }
        rowsOf = data.version;
        tree.insertAdjacentHTML("beforeend", rows.join("\\n"));
        Array.prototype.forEach.call(tree.querySelectorAll("details.run[data-run]"), function (r) {
          if (open[r.getAttribute("data-run")]) { r.open = true; openRun(r); }
        });
        if (data.extend !== undefined) {
          path = ranges(data.extend.path);
          leaf = data.extend.leaf;
          leafId = data.extend.leafId;
          if (followEnd) {
            var stick = panel.scrollTop + panel.clientHeight >= panel.scrollHeight - 8;
            cards.insertAdjacentHTML("beforeend", data.extend.cards);
            to = length(path);
            if (stick) panel.scrollTop = panel.scrollHeight;
          }
        } else if (data.added > 0) {
          notice.hidden = false;
          notice.textContent = data.added + (data.added === 1 ? " new entry" : " new entries") + " on another branch: choose it in the tree";
        }
        tree.scrollTop = top;
        mark();
        if (rest) {
          rest = false;
          main.removeAttribute("data-rest");
          d.documentElement.setAttribute("data-ready", "1");
        }
      }
      if (again) { again = false; update(); }
    }, function () {
      updating = false;
      if (rest) {
        notice.hidden = false;
        notice.textContent = "The tree of this session could not be drawn: reload the page.";
      }
    });
  }
  follow("?s=" + encodeURIComponent(key), function () { update(); });

  mark();
  var focus = Number(main.getAttribute("data-focus"));
  if (focus >= 0 && card(focus) !== null) flash(card(focus));
  else panel.scrollTop = panel.scrollHeight;
  if (rest) update();
  else d.documentElement.setAttribute("data-ready", "1");
})();
`

/** `'sha256-…'` of a text, as a Content-Security-Policy names an inline script or style. */
const hashOf = (text: string): string => `'sha256-${createHash("sha256").update(text, "utf8").digest("base64")}'`

export const STYLE_HASH = hashOf(STYLE)
export const SCRIPT_HASH = hashOf(SCRIPT)

/**
 * The policy of every page: its own style and script by hash; images from this server and from
 * `data:` URLs (the view draws small images inline); requests to this server only; nothing framed,
 * no form sent elsewhere, no base URL.
 */
export const CONTENT_SECURITY_POLICY =
  `default-src 'none'; script-src ${SCRIPT_HASH}; style-src ${STYLE_HASH}; img-src 'self' data:; connect-src 'self'; ` +
  `font-src 'none'; media-src 'none'; object-src 'none'; frame-src 'none'; worker-src 'none'; manifest-src 'none'; ` +
  `base-uri 'none'; form-action 'self'; frame-ancestors 'none'`
