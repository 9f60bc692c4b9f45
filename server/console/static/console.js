// tm-guide web console: calls the server's /v1 API with the key the user entered.
// The key lives in sessionStorage only; every text from the server goes into the page as text
// (textContent), never as markup.

const KEY_SLOT = "tm-guide-key";
const API = document.body.dataset.api || "";
const $ = (id) => document.getElementById(id);

const state = { memories: [] };

// ---- talking to the server ---------------------------------------------------------------

class ApiError extends Error {
  constructor(status, body) {
    const message = (body && (body.message || body.error)) || `HTTP ${status}`;
    super(message);
    this.status = status;
    this.field = body && body.field;
  }
}

function authHeaders() {
  const key = sessionStorage.getItem(KEY_SLOT);
  return key ? { Authorization: `Bearer ${key}` } : {};
}

async function api(path, { method = "GET", json, body, headers = {}, key } = {}) {
  const sent = { ...(key !== undefined ? { Authorization: `Bearer ${key}` } : authHeaders()),
                 ...headers };
  let payload = body;
  if (json !== undefined) {
    payload = JSON.stringify(json);
    sent["Content-Type"] = "application/json";
  }
  let response;
  try {
    response = await fetch(API + path, { method, headers: sent, body: payload });
  } catch (exc) {
    throw new ApiError(0, { message: `the server did not answer (${exc.message})` });
  }
  const type = response.headers.get("Content-Type") || "";
  if (!response.ok) {
    const detail = type.includes("json") ? await response.json() : null;
    throw new ApiError(response.status, detail);
  }
  return type.includes("json") ? response.json() : response;
}

function showError(exc, what) {
  const box = $("error");
  let text = `${what}: ${exc.message}`;
  if (exc.field) text += ` (field ${exc.field})`;
  if (exc.status === 401) text += ". Enter a valid API key above.";
  if (exc.status === 403) text += ". This key's scopes do not cover it.";
  box.textContent = text;
  box.hidden = false;
}

function clearError() {
  $("error").hidden = true;
  $("error").textContent = "";
}

// ---- small DOM helpers -------------------------------------------------------------------

function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs)) {
    if (value === undefined || value === null) continue;
    if (name === "class") node.className = value;
    else if (name === "text") node.textContent = value;
    else node.setAttribute(name, value);
  }
  for (const child of children) {
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return node;
}

function fillRows(tbody, rows) {
  tbody.replaceChildren(...rows.map((cells) => el("tr", {}, ...cells.map((c) =>
    c instanceof Node ? el("td", {}, c) : el("td", { text: c ?? "" })))));
}

const percent = (x) => `${Math.round(x * 100)}%`;

// ---- key --------------------------------------------------------------------------------

async function useKey(event) {
  event.preventDefault();
  const key = $("api-key").value.trim();
  clearError();
  try {
    await api("/v1/memories", { key });
  } catch (exc) {
    sessionStorage.removeItem(KEY_SLOT);
    showError(exc, "The server refused this key");
    return;
  }
  sessionStorage.setItem(KEY_SLOT, key);
  $("api-key").value = "";
  $("api-key").placeholder = "a key is in use for this tab";
  await loadMemories();
}

function forgetKey() {
  sessionStorage.removeItem(KEY_SLOT);
  $("api-key").placeholder = "paste a key from tm-guide keys create";
  state.memories = [];
  renderMemories();
}

// ---- server and memories -----------------------------------------------------------------

async function loadStatus() {
  const line = $("server-status");
  try {
    const response = await fetch(API + "/ready");
    const ready = await response.json();
    const engine = ready.engine;
    line.textContent = ready.status === "ready"
      ? `Ready · engine ${engine.engine} (${engine.precision}${engine.kernel ? ", " + engine.kernel : ""})`
      : `Not ready: ${Object.entries(ready.checks).map(([k, v]) => `${k} ${v}`).join(", ")}`;
  } catch (exc) {
    line.textContent = `The server did not answer /ready (${exc.message})`;
  }
}

async function loadMemories() {
  try {
    const listed = await api("/v1/memories");
    state.memories = listed.memories;
    $("key-hint").textContent = "";
    clearError();
  } catch (exc) {
    state.memories = [];
    if (exc.status === 401 && !sessionStorage.getItem(KEY_SLOT)) {
      $("key-hint").textContent = "Enter an API key to see the memories.";
    } else {
      showError(exc, "Could not list the memories");
    }
  }
  renderMemories();
}

function renderMemories() {
  const picks = $("try-memories");
  picks.querySelectorAll(".pick").forEach((node) => node.remove());
  $("no-memories").hidden = state.memories.length > 0;
  state.memories.forEach((memory, i) => {
    const id = `pick-${i}`;
    const box = el("input", { type: "checkbox", id, name: "memory", value: memory.name });
    if (i === 0) box.checked = true;
    picks.append(el("span", { class: "pick" }, box, el("label", { for: id,
      text: `${memory.name} (${memory.source_lang}→${memory.target_lang}, ${memory.segment_count})` })));
  });

  fillRows($("memory-table").tBodies[0], state.memories.map((m) => [
    m.name,
    `${m.source_lang} → ${m.target_lang}`,
    String(m.segment_count),
    String(m.revision),
    (m.created_at || "").slice(0, 19).replace("T", " "),
    el("button", { type: "button", class: "export", "data-memory": m.name,
                   "aria-label": `Export ${m.name} as TMX`, text: "TMX" }),
  ]));
  for (const select of document.querySelectorAll(".memory-select")) {
    const chosen = select.value;
    select.replaceChildren(...state.memories.map((m) => el("option", { value: m.name, text: m.name })));
    if (chosen) select.value = chosen;
  }
}

// ---- try a segment -----------------------------------------------------------------------

async function suggest(event) {
  event.preventDefault();
  clearError();
  const memories = [...document.querySelectorAll("#try-memories input:checked")].map((b) => b.value);
  if (!memories.length) {
    showError(new Error("pick at least one memory"), "Cannot suggest");
    return;
  }
  const options = { unguided: true, m: Number($("m").value || 10) };
  if ($("lambda").value !== "") options.lambda = Number($("lambda").value);
  const button = $("suggest");
  button.disabled = true;
  button.textContent = "Translating…";
  try {
    const answer = await api("/v1/suggest", {
      method: "POST",
      json: { source: $("source").value, memories, options },
    });
    renderResult(answer, memories);
  } catch (exc) {
    showError(exc, "The suggestion failed");
  } finally {
    button.disabled = false;
    button.textContent = "Suggest";
  }
}

function renderResult(answer, memories) {
  const result = answer.results[0];
  const translation = result.translation;
  const target = state.memories.find((m) => m.name === memories[0]);
  $("result").hidden = false;
  $("unit").hidden = true;

  const origin = $("origin");
  if (translation.origin === "tm") {
    origin.textContent = `The TM holds this source verbatim (${translation.tm_match.match}% in ` +
      `${translation.tm_match.memory}): a CAT tool inserts “${translation.text}”. ` +
      "The guided translation is below.";
    origin.hidden = false;
  } else if (translation.repaired) {
    const repaired = translation.repaired;
    const share = Math.round((repaired.similarity ?? 0) * 100);
    origin.textContent = `The guided translation repairs the closest TM unit (similarity ` +
      `${share}% in ${repaired.memory}): its words are kept where the source is unchanged.`;
    origin.hidden = false;
  } else {
    origin.hidden = true;
  }
  const guided = $("guided");
  if (target) guided.lang = target.target_lang;
  guided.replaceChildren(...pieceRuns(translation.mt_text, translation.pieces_used));
  $("legend").hidden = !translation.pieces_used.length;

  const unguided = $("unguided");
  if (target) unguided.lang = target.target_lang;
  unguided.replaceChildren(...diffRuns(translation.unguided ?? "", translation.mt_text));

  fillRows($("matches").tBodies[0], result.matches.map((m) => [
    el("span", { class: `match ${m.match >= 100 ? "exact" : ""}`, text: `${m.match}%` }),
    m.source, m.target, m.memory,
  ]));
  $("no-matches").hidden = result.matches.length > 0;

  const stages = Object.entries(result.timings_ms);
  stages.push(["request (server)", answer.timings_ms.total]);
  fillRows($("timings").tBodies[0], stages.map(([stage, ms]) => [stage, ms.toFixed(1)]));
  $("engine").textContent = `engine ${translation.engine}; ${translation.guided ? "guided" :
    "no piece found, native beam search"}; model ${answer.model ? answer.model.name : "?"}`;
}

function band(similarity) {
  if (similarity >= 0.9) return 4;
  if (similarity >= 0.75) return 3;
  if (similarity >= 0.5) return 2;
  return 1;
}

function bestSimilarity(piece) {
  const scores = piece.segments.map((s) => s.similarity).filter((s) => s !== null);
  return scores.length ? Math.max(...scores) : piece.score;
}

// The text cut at every piece boundary; a run covered by pieces is a <mark> coloured by the
// closest TM unit among them (pieces may overlap).
function pieceRuns(text, pieces) {
  const placed = pieces.filter((p) => Array.isArray(p.span));
  const cuts = new Set([0, text.length]);
  placed.forEach((p) => { cuts.add(p.span[0]); cuts.add(p.span[1]); });
  const points = [...cuts].sort((a, b) => a - b);
  const runs = [];
  for (let i = 0; i + 1 < points.length; i += 1) {
    const [start, end] = [points[i], points[i + 1]];
    const chunk = text.slice(start, end);
    const covering = placed.filter((p) => p.span[0] <= start && end <= p.span[1]);
    if (!covering.length || !chunk.trim()) {
      runs.push(document.createTextNode(chunk));
      continue;
    }
    const best = covering.reduce((a, b) => (bestSimilarity(b) > bestSimilarity(a) ? b : a));
    const similarity = bestSimilarity(best);
    const units = covering.flatMap((p) => p.segments.map((s) =>
      `TM unit #${s.id} in ${s.memory ?? "?"}, similarity ${s.similarity === null ? "?" : percent(s.similarity)}`));
    const mark = el("mark", {
      class: `piece sim-${band(similarity)}`,
      tabindex: "0",
      role: "button",
      title: `piece “${best.text}” from ${[...new Set(units)].join("; ")}`,
      "aria-label": `${chunk}: TM piece, similarity ${percent(similarity)}`,
      "data-segments": JSON.stringify(covering.flatMap((p) => p.segments)),
      "data-piece": covering.map((p) => p.text).join(" / "),
    }, chunk);
    runs.push(mark);
  }
  return runs;
}

async function showUnit(mark) {
  const box = $("unit");
  const body = $("unit-body");
  $("unit-piece").textContent = mark.dataset.piece;
  body.replaceChildren(el("p", { class: "help", text: "Loading…" }));
  box.hidden = false;
  const refs = JSON.parse(mark.dataset.segments);
  const seen = new Set();
  const blocks = [];
  for (const ref of refs) {
    if (seen.has(ref.id)) continue;
    seen.add(ref.id);
    try {
      const segment = await api(`/v1/memories/${encodeURIComponent(ref.memory)}/segments/${ref.id}`);
      blocks.push(el("dl", { class: "unit-fields" },
        el("dt", { text: "Memory" }), el("dd", { text: `${ref.memory} · unit #${ref.id}` +
          (segment.tuid ? ` · tuid ${segment.tuid}` : "") }),
        el("dt", { text: "Similarity" }), el("dd", { text: ref.similarity === null ? "?" :
          percent(ref.similarity) }),
        el("dt", { text: "Source" }), el("dd", { class: "unit-source", text: segment.source }),
        el("dt", { text: "Target" }), el("dd", { class: "unit-target", text: segment.target }),
        el("dt", { text: "Changed" }), el("dd", { text: `${(segment.changed_at || "").slice(0, 19)
          .replace("T", " ")} ${segment.changed_by ? "by " + segment.changed_by : ""}` })));
    } catch (exc) {
      blocks.push(el("p", { class: "error-inline", text: `unit #${ref.id}: ${exc.message}` }));
    }
  }
  body.replaceChildren(...blocks);
  box.focus();
}

// Word-level difference between the unguided and the guided text (longest common subsequence
// of words); a stretch that guidance changed shows the unguided words struck, then the guided
// ones underlined.
function diffRuns(before, after) {
  const a = before.split(/\s+/).filter((w) => w.length);
  const b = after.split(/\s+/).filter((w) => w.length);
  const lcs = Array.from({ length: a.length + 1 }, () => new Array(b.length + 1).fill(0));
  for (let i = a.length - 1; i >= 0; i -= 1) {
    for (let j = b.length - 1; j >= 0; j -= 1) {
      lcs[i][j] = a[i] === b[j] ? lcs[i + 1][j + 1] + 1 : Math.max(lcs[i + 1][j], lcs[i][j + 1]);
    }
  }
  const groups = [];  // [kind, words]: kind "same", "del" or "ins"
  const push = (kind, word) => {
    const last = groups[groups.length - 1];
    if (last && last[0] === kind) last[1].push(word);
    else groups.push([kind, [word]]);
  };
  let i = 0;
  let j = 0;
  while (i < a.length || j < b.length) {
    if (i < a.length && j < b.length && a[i] === b[j]) {
      push("same", a[i]);
      i += 1;
      j += 1;
    } else if (j >= b.length || (i < a.length && lcs[i + 1][j] >= lcs[i][j + 1])) {
      push("del", a[i]);
      i += 1;
    } else {
      push("ins", b[j]);
      j += 1;
    }
  }
  const runs = [];
  groups.forEach(([kind, words], k) => {
    if (k) runs.push(document.createTextNode(" "));
    const text = words.join(" ");
    runs.push(kind === "same" ? document.createTextNode(text) : el(kind, { text }));
  });
  return runs;
}

// ---- memories: concordance, import, export -------------------------------------------------

async function concordance(event) {
  event.preventDefault();
  clearError();
  const memory = $("concordance-memory").value;
  const params = new URLSearchParams({ q: $("concordance-q").value, side: $("concordance-side").value });
  try {
    const found = await api(`/v1/memories/${encodeURIComponent(memory)}/concordance?${params}`);
    fillRows($("concordance").tBodies[0], found.segments.map((s) => [
      s.source, s.target, (s.changed_at || "").slice(0, 10),
    ]));
    $("concordance").hidden = !found.segments.length;
    $("concordance-none").hidden = found.segments.length > 0;
  } catch (exc) {
    showError(exc, "The concordance search failed");
  }
}

async function importFile(event) {
  event.preventDefault();
  clearError();
  const memory = $("import-memory").value;
  const file = $("import-file").files[0];
  if (!memory || !file) return;
  const format = /\.xliff?$/i.test(file.name) ? "xliff" : "tmx";
  setProgress(0, `Uploading ${file.name}…`);
  $("import-status").hidden = false;
  try {
    const started = await api(
      `/v1/memories/${encodeURIComponent(memory)}/imports?format=${format}`,
      { method: "POST", body: file, headers: { "Content-Type": "application/octet-stream" } },
    );
    await followJob(started.job.id);
  } catch (exc) {
    setProgress(0, "The import did not start.");
    showError(exc, "The import failed");
  }
}

function setProgress(fraction, message) {
  const value = Math.round(fraction * 100);
  $("import-progress").value = value;
  $("import-percent").textContent = `${value}%`;
  if (message !== undefined) $("import-result").textContent = message;
}

async function followJob(jobId) {
  for (;;) {
    const job = await api(`/v1/jobs/${jobId}`);
    if (job.status === "succeeded") {
      const r = job.result;
      setProgress(1, `Done: ${r.added} added, ${r.updated} updated, ${r.merged} merged, ` +
        `${r.skipped} skipped; the memory now holds ${r.segment_count} segments (revision ${r.revision}).`);
      await loadMemories();
      return;
    }
    if (job.status === "failed" || job.status === "interrupted") {
      const error = job.error || {};
      setProgress(job.progress.fraction, `Import ${job.status}: ${error.message || "see the server log"}` +
        (error.line ? ` (line ${error.line})` : "") + `; stored: ${job.committed ?? "nothing"}.`);
      return;
    }
    setProgress(job.progress.fraction, `${job.phase}: ${job.progress.records_read} units read…`);
    await new Promise((resolve) => setTimeout(resolve, 300));
  }
}

async function exportMemory(name) {
  clearError();
  try {
    const response = await api(`/v1/memories/${encodeURIComponent(name)}/export`);
    const url = URL.createObjectURL(await response.blob());
    const link = el("a", { href: url, download: `${name}.tmx` });
    document.body.append(link);
    link.click();
    link.remove();
    setTimeout(() => URL.revokeObjectURL(url), 10000);
  } catch (exc) {
    showError(exc, `Could not export ${name}`);
  }
}

// ---- tabs ---------------------------------------------------------------------------------

function selectTab(tab) {
  for (const other of document.querySelectorAll('[role="tab"]')) {
    const selected = other === tab;
    other.setAttribute("aria-selected", String(selected));
    other.tabIndex = selected ? 0 : -1;
    $(other.getAttribute("aria-controls")).hidden = !selected;
  }
  tab.focus();
}

function tabKeys(event) {
  const tabs = [...document.querySelectorAll('[role="tab"]')];
  const at = tabs.indexOf(event.target);
  if (event.key === "ArrowRight") selectTab(tabs[(at + 1) % tabs.length]);
  else if (event.key === "ArrowLeft") selectTab(tabs[(at - 1 + tabs.length) % tabs.length]);
  else return;
  event.preventDefault();
}

// ---- wiring -------------------------------------------------------------------------------

function start() {
  $("key-form").addEventListener("submit", useKey);
  $("forget-key").addEventListener("click", forgetKey);
  $("try-form").addEventListener("submit", suggest);
  $("source").addEventListener("keydown", (event) => {
    if (event.key === "Enter" && (event.ctrlKey || event.metaKey)) {
      event.preventDefault();
      $("try-form").requestSubmit();
    }
  });
  $("guided").addEventListener("click", (event) => {
    const mark = event.target.closest("mark.piece");
    if (mark) showUnit(mark);
  });
  $("guided").addEventListener("keydown", (event) => {
    const mark = event.target.closest("mark.piece");
    if (mark && (event.key === "Enter" || event.key === " ")) {
      event.preventDefault();
      showUnit(mark);
    }
  });
  $("concordance-form").addEventListener("submit", concordance);
  $("import-form").addEventListener("submit", importFile);
  $("memory-table").addEventListener("click", (event) => {
    const button = event.target.closest("button.export");
    if (button) exportMemory(button.dataset.memory);
  });
  for (const tab of document.querySelectorAll('[role="tab"]')) {
    tab.addEventListener("click", () => selectTab(tab));
    tab.addEventListener("keydown", tabKeys);
  }
  if (sessionStorage.getItem(KEY_SLOT)) $("api-key").placeholder = "a key is in use for this tab";
  loadStatus().then(loadMemories);
}

start();
