/**
 * automem: the Memory tab of `hermes dashboard`.
 *
 * A plain script (no build step, no CDN): React and the dashboard's components come from
 * window.__HERMES_PLUGIN_SDK__, the data from automem's backend at /api/plugins/automem/ (automem/dashboard/).
 * The profile is read from the page's URL (?profile=NAME) and sent with every call; the SDK's fetchJSON adds the
 * dashboard's session token. Every change is a POST or PUT with a JSON body.
 *
 * Keyboard: "/" focuses the search box, Enter searches, the arrow keys move along the list, Escape closes the
 * detail (or the confirmation), every action is a button.
 */
(function () {
  "use strict";

  var SDK = window.__HERMES_PLUGIN_SDK__;
  if (!SDK || !window.__HERMES_PLUGINS__) return;

  var React = SDK.React;
  var h = React.createElement;
  var C = SDK.components || {};
  var Card = C.Card, CardContent = C.CardContent, Badge = C.Badge, Button = C.Button, Input = C.Input;
  var hooks = SDK.hooks;
  var useState = hooks.useState, useEffect = hooks.useEffect, useCallback = hooks.useCallback, useRef = hooks.useRef;
  var useI18n = SDK.useI18n || function () { return { locale: "en" }; };
  var timeAgo = (SDK.utils && SDK.utils.timeAgo) || function (s) { return new Date(s * 1000).toLocaleString(); };

  var API = "/api/plugins/automem";
  var PAGE = 50;

  // -- words ------------------------------------------------------------------------------------------------------
  var WORDS = {
    en: {
      title: "Memory", subtitle: "What the agent remembers, where it learned it, and the pipeline that extracts it",
      search: "Search memories", searchButton: "Search", clear: "Clear", refresh: "Refresh",
      profile: "Profile", scope: "Whose", category: "Category", status: "Status", pinnedOnly: "Pinned only",
      owner: "Owner", allScopes: "Everyone", all: "All",
      persona: "Persona", episodic: "Episodic", instruction: "Instruction",
      active: "Active", superseded: "Superseded", forgotten: "Forgotten",
      pinned: "Pinned", pin: "Pin", unpin: "Unpin", edit: "Edit", forget: "Forget",
      editLater: "Editing is not offered here", save: "Save correction",
      editHint: "The corrected memory (checked as `automem add` checks it; the old text stays in its history)",
      edited: "Corrected", turn: "Turn",
      of: "of", results: "results for", noMemories: "No memories here yet.", noResults: "Nothing found.",
      prev: "Previous", next: "Next", loading: "Loading…", close: "Close",
      detail: "Memory", provenance: "Where it came from", history: "History", session: "Session", task: "Task",
      job: "Extraction job", origin: "Origin", who: "Who said it", addedBy: "Added by", created: "Learned",
      updated: "Last confirmed", restated: "Said again", excerpt: "Their words", notRecorded: "not recorded",
      replaced: "It replaced", replacedBy: "Replaced by", events: "Events", none: "none", other: "Other fields",
      forgottenWords: "Forgotten: its words are deleted everywhere automem kept them; only the id remains.",
      confirmTitle: "Forget this memory for good?",
      confirmBody: "Its words, vector, excerpts and log lines are deleted everywhere. This cannot be undone.",
      confirmForget: "Forget for good", cancel: "Cancel", forgot: "Forgotten", pinnedDone: "Pinned", unpinnedDone: "Unpinned",
      health: "Pipeline", waiting: "Waiting jobs", failed: "Failed jobs", retry: "Retry", retryAll: "Retry all failed",
      lastExtraction: "Last extraction", never: "never", storeSize: "Store", memories: "memories",
      records: "records", disk: "on disk", attempts: "attempts", judgePairs: "Pairs for the judge",
      notCounted: "not counted", retried: "Sent back to the spool", distance: "distance", id: "Id",
      loadFailed: "The Memory tab could not load: ", shortcuts: "Keys: / search · ↑↓ move · Enter open · Esc close",
    },
    zh: {
      title: "记忆", subtitle: "智能体记住了什么、从哪里学到的，以及抽取记忆的流水线",
      search: "搜索记忆", searchButton: "搜索", clear: "清除", refresh: "刷新",
      profile: "配置", scope: "归属", category: "类别", status: "状态", pinnedOnly: "仅置顶",
      owner: "主人", allScopes: "所有人", all: "全部",
      persona: "个人", episodic: "事件", instruction: "指令",
      active: "有效", superseded: "已被取代", forgotten: "已遗忘",
      pinned: "置顶", pin: "置顶", unpin: "取消置顶", edit: "编辑", forget: "遗忘",
      editLater: "此处不提供编辑", save: "保存更正", editHint: "更正后的记忆（按 `automem add` 的规则检查；旧文字留在历史中）",
      edited: "已更正", turn: "轮次",
      of: "共", results: "条结果：", noMemories: "这里还没有记忆。", noResults: "没有找到。",
      prev: "上一页", next: "下一页", loading: "加载中…", close: "关闭",
      detail: "记忆", provenance: "来源", history: "历史", session: "会话", task: "任务",
      job: "抽取任务", origin: "途径", who: "谁说的", addedBy: "添加者", created: "学到于",
      updated: "最近确认", restated: "再次提到", excerpt: "原话", notRecorded: "未记录",
      replaced: "它取代了", replacedBy: "被取代为", events: "事件", none: "无", other: "其他字段",
      forgottenWords: "已遗忘：它的文字已从 automem 保存的所有位置删除，只剩编号。",
      confirmTitle: "永久遗忘这条记忆？",
      confirmBody: "它的文字、向量、原话和日志都会被删除，无法撤销。",
      confirmForget: "永久遗忘", cancel: "取消", forgot: "已遗忘", pinnedDone: "已置顶", unpinnedDone: "已取消置顶",
      health: "流水线", waiting: "等待中的任务", failed: "失败的任务", retry: "重试", retryAll: "全部重试",
      lastExtraction: "最近一次抽取", never: "从未", storeSize: "存储", memories: "条记忆",
      records: "条记录", disk: "磁盘", attempts: "次尝试", judgePairs: "待判定的记忆对",
      notCounted: "未统计", retried: "已放回队列", distance: "距离", id: "编号",
      loadFailed: "记忆页无法加载：", shortcuts: "按键：/ 搜索 · ↑↓ 移动 · Enter 打开 · Esc 关闭",
    },
  };

  function useWords() {
    var i18n = useI18n() || {};
    var locale = String(i18n.locale || "en").toLowerCase();
    return locale.indexOf("zh") === 0 ? WORDS.zh : WORDS.en;
  }

  // -- helpers ----------------------------------------------------------------------------------------------------
  function errorText(err) {
    // fetchJSON throws Error("<status>: <body>"); the body is {"detail": "..."} from automem's backend.
    var raw = err && err.message ? String(err.message) : String(err || "");
    var m = raw.match(/^(\d{3}):\s*([\s\S]*)$/);
    var body = m ? m[2] : raw;
    try {
      var parsed = JSON.parse(body);
      if (parsed && typeof parsed.detail === "string") return parsed.detail;
      if (parsed && Array.isArray(parsed.detail)) return parsed.detail.map(function (d) { return d.msg; }).join("; ");
    } catch (_e) { /* not JSON */ }
    return body || raw || "unknown error";
  }

  function query(params) {
    var parts = [];
    Object.keys(params).forEach(function (k) {
      var v = params[k];
      if (v === undefined || v === null || v === "") return;
      parts.push(encodeURIComponent(k) + "=" + encodeURIComponent(String(v)));
    });
    return parts.length ? "?" + parts.join("&") : "";
  }

  function getJSON(path, params) { return SDK.fetchJSON(API + path + query(params || {})); }

  function send(method, path, body) {
    return SDK.fetchJSON(API + path, {
      method: method, headers: { "Content-Type": "application/json" }, body: JSON.stringify(body || {}),
    });
  }

  function urlProfile() {
    try {
      var p = new URLSearchParams(window.location.search).get("profile");
      return p && /^[a-z0-9][a-z0-9_-]{0,63}$/.test(p) ? p : "";
    } catch (_e) { return ""; }
  }

  var CJK = /[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af]/;
  function langOf(text) { return text && CJK.test(text) ? "zh" : "en"; }

  function when(seconds) {
    if (!seconds) return "—";
    try { return timeAgo(seconds); } catch (_e) { return String(seconds); }
  }
  function exact(seconds) { return seconds ? new Date(seconds * 1000).toLocaleString() : ""; }
  function bytes(n) {
    if (n === null || n === undefined) return "—";
    if (n < 1024) return n + " B";
    if (n < 1048576) return (n / 1024).toFixed(1) + " KB";
    return (n / 1048576).toFixed(1) + " MB";
  }
  function scopeLabel(scope, w) { return !scope ? w.owner : scope; }

  // A native <select> styled like the dashboard's inputs: fully keyboard-operable, and readable by tests.
  function Choice(props) {
    return h("label", { className: "automem-field" },
      h("span", { className: "automem-field-label" }, props.label),
      h("select", {
        className: "automem-select", value: props.value, "data-testid": props.testid,
        onChange: function (e) { props.onChange(e.target.value); },
      }, props.options.map(function (o) { return h("option", { key: o.value, value: o.value }, o.label); })));
  }

  function Tag(props) {
    var cls = "automem-tag" + (props.kind ? " automem-tag-" + props.kind : "");
    return Badge ? h(Badge, { className: cls }, props.children)
      : h("span", { className: cls }, props.children);
  }

  // -- the list ---------------------------------------------------------------------------------------------------
  function MemoryRow(props) {
    var m = props.memory, w = props.words;
    return h("li", { className: "automem-row-item" },
      h("button", {
        type: "button", className: "automem-row" + (props.selected ? " automem-row-selected" : ""),
        "aria-pressed": props.selected ? "true" : "false", "data-memory-id": m.id,
        onClick: function () { props.onOpen(m.id); },
        onKeyDown: props.onKeyDown,
      },
        h("span", { className: "automem-row-text", lang: langOf(m.text) },
          m.text === null ? h("em", null, w.forgottenWords) : m.text),
        h("span", { className: "automem-row-meta" },
          h(Tag, { kind: m.category }, w[m.category] || m.category),
          m.pinned ? h(Tag, { kind: "pinned" }, w.pinned) : null,
          m.status !== "active" ? h(Tag, { kind: m.status }, w[m.status] || m.status) : null,
          m.scope ? h(Tag, { kind: "scope" }, m.scope) : null,
          m.profile && m.profile !== props.profile ? h(Tag, { kind: "profile" }, m.profile) : null,
          typeof m.distance === "number" ? h("span", { className: "automem-muted" }, w.distance + " " + m.distance.toFixed(3)) : null,
          h("span", { className: "automem-muted", title: exact(m.updated_at || m.created_at) },
            when(m.updated_at || m.created_at)))));
  }

  function moveFocus(e) {
    if (e.key !== "ArrowDown" && e.key !== "ArrowUp") return;
    var rows = Array.prototype.slice.call(document.querySelectorAll(".automem-row"));
    var i = rows.indexOf(e.currentTarget);
    var next = rows[i + (e.key === "ArrowDown" ? 1 : -1)];
    if (next) { e.preventDefault(); next.focus(); }
  }

  // -- the detail -------------------------------------------------------------------------------------------------
  function Field(props) {
    return h("div", { className: "automem-kv" },
      h("dt", null, props.label),
      h("dd", { lang: langOf(typeof props.value === "string" ? props.value : "") },
        props.value === null || props.value === undefined || props.value === ""
          ? h("span", { className: "automem-muted" }, props.empty) : props.value));
  }

  function ChainList(props) {
    var w = props.words;
    if (!props.items || !props.items.length) return h("span", { className: "automem-muted" }, w.none);
    return h("ul", { className: "automem-chain" }, props.items.map(function (m) {
      return h("li", { key: m.id },
        h("button", { type: "button", className: "automem-link", onClick: function () { props.onOpen(m.id); } },
          h("span", { lang: langOf(m.text) }, m.text === null ? w.forgotten : m.text)),
        h("span", { className: "automem-muted" }, " · " + when(m.updated_at || m.created_at)));
    }));
  }

  // A correction: the text goes through `automem edit` (the write path's checks); a refusal shows as the page's error.
  function EditForm(props) {
    var w = props.words, m = props.memory;
    var s = useState(m.text || ""), value = s[0], setValue = s[1];
    var boxRef = useRef(null);
    useEffect(function () { if (boxRef.current) boxRef.current.focus(); }, []);
    return h("form", { className: "automem-edit", "data-testid": "automem-edit-form",
      onSubmit: function (e) { e.preventDefault(); if (value.trim()) props.onSave(m, value); },
      onKeyDown: function (e) { if (e.key === "Escape") { e.stopPropagation(); props.onCancel(); } } },
      h("label", { className: "automem-field-label", htmlFor: "automem-edit-text" }, w.editHint),
      h("textarea", { id: "automem-edit-text", ref: boxRef, className: "automem-edit-text", rows: 3, maxLength: 2000,
        value: value, lang: langOf(value), "data-testid": "automem-edit-text",
        onChange: function (e) { setValue(e.target.value); } }),
      h("div", { className: "automem-actions" },
        h("button", { type: "button", className: "automem-plain-button", onClick: props.onCancel }, w.cancel),
        h(Button, { type: "submit", size: "sm", disabled: props.busy || !value.trim() || value === m.text,
          "data-testid": "automem-edit-save" }, w.save)));
  }

  function Detail(props) {
    var w = props.words, d = props.detail;
    var cancelRef = useRef(null);
    var boxRef = useRef(null);
    var shownId = d && d.memory ? d.memory.id : "";
    // Opening a memory moves the focus into its detail (Escape closes it and gives the focus back to its row).
    useEffect(function () { if (shownId && boxRef.current) boxRef.current.focus({ preventScroll: true }); }, [shownId]);
    useEffect(function () { if (props.confirming && cancelRef.current) cancelRef.current.focus(); }, [props.confirming]);
    if (!d) return null;
    var m = d.memory, p = d.provenance, hist = d.history, caps = d.capabilities || {};
    var active = m.status === "active";
    return h("aside", {
      className: "automem-detail", "aria-label": w.detail, "data-testid": "automem-detail", tabIndex: -1, ref: boxRef,
      onKeyDown: function (e) {
        if (e.key === "Escape") { e.stopPropagation(); if (props.confirming) props.onCancel(); else props.onClose(); }
      },
    },
      h("div", { className: "automem-detail-head" },
        h("h3", { className: "automem-h3" }, w.detail),
        h(Button, { size: "sm", ghost: true, onClick: props.onClose, "aria-label": w.close }, "✕")),
      h("p", { className: "automem-detail-text", lang: langOf(m.text), "data-testid": "automem-detail-text" },
        m.text === null ? w.forgottenWords : m.text),
      h("div", { className: "automem-row-meta" },
        h(Tag, { kind: m.category }, w[m.category] || m.category),
        h(Tag, { kind: m.status }, w[m.status] || m.status),
        m.pinned ? h(Tag, { kind: "pinned" }, w.pinned) : null,
        h(Tag, { kind: "scope" }, scopeLabel(m.scope, w)),
        h(Tag, { kind: "profile" }, m.profile)),
      active ? h("div", { className: "automem-actions" },
        m.category !== "episodic" || m.pinned ? h(Button, {
          size: "sm", disabled: props.busy, "data-testid": "automem-pin",
          onClick: function () { props.onPin(m, !m.pinned); },
        }, m.pinned ? w.unpin : w.pin) : null,
        h(Button, { size: "sm", disabled: props.busy || !caps.edit || props.editing,
          title: caps.edit ? "" : w.editLater,
          "data-testid": "automem-edit", onClick: props.onEdit }, w.edit),
        h(Button, { size: "sm", destructive: true, disabled: props.busy, "data-testid": "automem-forget",
          onClick: props.onAskForget }, w.forget)) : null,
      props.editing ? h(EditForm, { memory: m, words: w, busy: props.busy, onSave: props.onSaveEdit,
        onCancel: props.onCancelEdit }) : null,
      props.confirming ? h("div", {
        className: "automem-confirm", role: "alertdialog", "aria-modal": "true", "aria-labelledby": "automem-confirm-title",
        "aria-describedby": "automem-confirm-body", "data-testid": "automem-confirm",
      },
        h("strong", { id: "automem-confirm-title" }, w.confirmTitle),
        h("p", { id: "automem-confirm-body" }, w.confirmBody),
        h("div", { className: "automem-actions" },
          h("button", { type: "button", ref: cancelRef, className: "automem-plain-button", onClick: props.onCancel }, w.cancel),
          h(Button, { size: "sm", destructive: true, disabled: props.busy, "data-testid": "automem-confirm-forget",
            onClick: function () { props.onForget(m); } }, w.confirmForget))) : null,
      p ? h("section", { className: "automem-section" },
        h("h4", { className: "automem-h4" }, w.provenance),
        h("dl", { className: "automem-kvs" },
          h(Field, { label: w.id, value: m.id }),
          h(Field, { label: w.who, value: p.who === "owner" ? w.owner : p.who }),
          h(Field, { label: w.created, value: p.created_at ? exact(p.created_at) : "", empty: w.notRecorded }),
          h(Field, { label: w.updated, value: p.updated_at ? exact(p.updated_at) : "", empty: w.notRecorded }),
          h(Field, { label: w.session, value: p.session_id, empty: w.notRecorded }),
          p.task_id ? h(Field, { label: w.task, value: p.task_id }) : null,
          h(Field, { label: w.origin, value: p.origin, empty: w.notRecorded }),
          h(Field, { label: w.addedBy, value: p.added_by, empty: w.notRecorded }),
          h(Field, { label: w.job, value: p.job, empty: w.notRecorded }),
          p.restated ? h(Field, { label: w.restated, value: String(p.restated) }) : null,
          h(Field, { label: w.excerpt, value: p.excerpt, empty: w.notRecorded }),
          p.evidence && p.evidence.turn ? h(Field, { label: w.turn, value: String(p.evidence.turn) +
            (p.evidence.role ? " (" + p.evidence.role + ")" : "") }) : null,
          Object.keys(p.other || {}).length ? h(Field, { label: w.other,
            value: Object.keys(p.other).map(function (k) { return k + ": " + p.other[k]; }).join(" · ") }) : null))
        : null,
      hist ? h("section", { className: "automem-section", "data-testid": "automem-history" },
        h("h4", { className: "automem-h4" }, w.history),
        h("div", { className: "automem-kv-block" }, h("div", { className: "automem-field-label" }, w.replaced),
          h(ChainList, { items: hist.replaced, words: w, onOpen: props.onOpen })),
        h("div", { className: "automem-kv-block" }, h("div", { className: "automem-field-label" }, w.replacedBy),
          h(ChainList, { items: hist.replaced_by, words: w, onOpen: props.onOpen })),
        h("div", { className: "automem-kv-block" }, h("div", { className: "automem-field-label" }, w.events),
          hist.events ? h("ul", { className: "automem-chain" }, hist.events.map(function (ev, i) {
            return h("li", { key: i, "data-testid": "automem-event" }, (ev.kind || ev.event || "") + " · " +
              exact(ev.at || ev.ts) + (ev.session_id ? " · " + w.session + " " + ev.session_id : "") +
              (ev.excerpt ? " · “" + ev.excerpt + "”" : "") + (ev.reason ? " · " + ev.reason : ""));
          })) : h("span", { className: "automem-muted" }, w.notRecorded))) : null);
  }

  // -- the pipeline -----------------------------------------------------------------------------------------------
  function Health(props) {
    var w = props.words, hl = props.health;
    if (!hl) return null;
    var st = hl.store || {};
    var last = hl.last_extraction;
    return h(Card, { className: "automem-card" }, h(CardContent, { className: "automem-card-body" },
      h("div", { className: "automem-detail-head" },
        h("h3", { className: "automem-h3" }, w.health),
        h(Button, { size: "sm", ghost: true, onClick: props.onRefresh }, w.refresh)),
      h("dl", { className: "automem-kvs automem-health", "data-testid": "automem-health" },
        h(Field, { label: w.storeSize, value: st.active + " " + w.memories + " · " + st.records + " " + w.records +
          (st.forgotten ? " · " + st.forgotten + " " + w.forgotten : "") +
          (st.disk_bytes !== null && st.disk_bytes !== undefined ? " · " + bytes(st.disk_bytes) + " " + w.disk : "") }),
        h(Field, { label: w.lastExtraction, empty: w.never, value: last ? (when(last.at) + " · " + (last.status || "") +
          (last.backend ? " · " + last.backend : "") + (last.error ? " · " + last.error : "")) : "" }),
        h(Field, { label: w.waiting, value: String(hl.waiting.count) }),
        h(Field, { label: w.failed, value: String(hl.failed.count) }),
        h(Field, { label: w.judgePairs, value: hl.judge_pairs === null ? "" : String(hl.judge_pairs), empty: w.notCounted })),
      hl.waiting.jobs.length ? h("ul", { className: "automem-jobs", "aria-label": w.waiting }, hl.waiting.jobs.map(function (j) {
        return h("li", { key: j.id, className: "automem-job" },
          h("code", null, j.id), h("span", { className: "automem-muted" }, " · " + j.profile + " · " + when(j.created_at) +
            " · " + j.attempts + " " + w.attempts), j.error ? h("div", { className: "automem-job-error" }, j.error) : null);
      })) : null,
      hl.failed.jobs.length ? h("ul", { className: "automem-jobs", "aria-label": w.failed }, hl.failed.jobs.map(function (j) {
        return h("li", { key: j.id, className: "automem-job automem-job-failed" },
          h("code", null, j.id), h("span", { className: "automem-muted" }, " · " + j.profile + " · " + j.attempts + " " + w.attempts),
          h(Button, { size: "sm", disabled: props.busy, onClick: function () { props.onRetry(j.id); } }, w.retry),
          j.error ? h("div", { className: "automem-job-error" }, j.error) : null);
      })) : null,
      hl.failed.count > 1 ? h(Button, { size: "sm", disabled: props.busy, onClick: function () { props.onRetry(null); } },
        w.retryAll) : null));
  }

  // -- the page ---------------------------------------------------------------------------------------------------
  function MemoryPage() {
    var w = useWords();
    var s = useState(urlProfile()), profile = s[0], setProfile = s[1];
    s = useState(null); var overview = s[0], setOverview = s[1];
    s = useState({ scope: "owner", category: "all", status: "active", pinned: false }); var filters = s[0], setFilters = s[1];
    s = useState(0); var offset = s[0], setOffset = s[1];
    s = useState(""); var text = s[0], setText = s[1];
    s = useState(""); var searched = s[0], setSearched = s[1];
    s = useState(null); var listing = s[0], setListing = s[1];
    s = useState(false); var loading = s[0], setLoading = s[1];
    s = useState(""); var error = s[0], setError = s[1];
    s = useState(""); var notice = s[0], setNotice = s[1];
    s = useState(null); var selected = s[0], setSelected = s[1];
    s = useState(null); var detail = s[0], setDetail = s[1];
    s = useState(false); var confirming = s[0], setConfirming = s[1];
    s = useState(false); var editing = s[0], setEditing = s[1];
    s = useState(false); var busy = s[0], setBusy = s[1];
    s = useState(null); var health = s[0], setHealth = s[1];
    s = useState(0); var tick = s[0], setTick = s[1];

    var base = { profile: profile || undefined };

    useEffect(function () {
      getJSON("/overview", base).then(function (o) {
        setOverview(o); if (!profile) setProfile(o.profile);
      }).catch(function (e) { setError(errorText(e)); });
    }, [profile, tick]);

    useEffect(function () {
      setLoading(true);
      var common = Object.assign({}, base, { scope: filters.scope, category: filters.category });
      var call = searched
        ? getJSON("/search", Object.assign(common, { q: searched }))
        : getJSON("/memories", Object.assign(common, { status: filters.status, pinned: filters.pinned ? "true" : "",
          offset: offset, limit: PAGE }));
      var live = true;
      call.then(function (res) { if (live) { setListing(Object.assign({ query: searched }, res)); setError(""); } })
        .catch(function (e) { if (live) { setListing(null); setError(errorText(e)); } })
        .finally(function () { if (live) setLoading(false); });
      return function () { live = false; };
    }, [profile, filters, offset, searched, tick]);

    var loadHealth = useCallback(function () {
      getJSON("/health", base).then(setHealth).catch(function (e) { setError(errorText(e)); });
    }, [profile]);
    useEffect(loadHealth, [loadHealth, tick]);

    var open = useCallback(function (id) {
      setSelected(id); setConfirming(false); setEditing(false);
      getJSON("/memories/" + encodeURIComponent(id), base).then(setDetail)
        .catch(function (e) { setDetail(null); setError(errorText(e)); });
    }, [profile]);

    useEffect(function () {
      function onKey(e) {
        var tag = (e.target && e.target.tagName) || "";
        if (e.key === "/" && tag !== "INPUT" && tag !== "TEXTAREA" && tag !== "SELECT") {
          var box = document.querySelector('[data-testid="automem-search"]');
          if (box) { e.preventDefault(); box.focus(); }
        }
      }
      document.addEventListener("keydown", onKey);
      return function () { document.removeEventListener("keydown", onKey); };
    }, []);

    function setFilter(key, value) {
      setFilters(Object.assign({}, filters, (function () { var o = {}; o[key] = value; return o; })()));
      setOffset(0);
    }
    function refresh() { setTick(tick + 1); if (selected) open(selected); }
    function closeDetail() {
      var id = selected;
      setSelected(null); setDetail(null); setConfirming(false);
      var row = id && document.querySelector('.automem-row[data-memory-id="' + id + '"]');
      if (row) row.focus();
    }
    function act(promise, message, after) {
      setBusy(true); setNotice("");
      return promise.then(function (res) { setNotice(message); setError(""); if (after) after(res); setTick(tick + 1); })
        .catch(function (e) { setError(errorText(e)); })
        .finally(function () { setBusy(false); });
    }
    function pin(m, value) {
      act(send("POST", "/memories/" + encodeURIComponent(m.id) + "/pin",
        { profile: profile || undefined, scope: m.scope ? m.scope : "owner", pinned: value }),
        value ? w.pinnedDone : w.unpinnedDone, function () { open(m.id); });
    }
    function saveEdit(m, value) {
      act(send("PUT", "/memories/" + encodeURIComponent(m.id), { profile: profile || undefined, text: value }),
        w.edited, function (res) { setEditing(false); open(res.id); });
    }
    function forget(m) {
      act(send("POST", "/memories/" + encodeURIComponent(m.id) + "/forget", { profile: profile || undefined, confirm: m.id }),
        w.forgot, function () { setConfirming(false); setSelected(null); setDetail(null); });
    }
    function retry(jobId) {
      act(send("POST", "/jobs/retry", jobId ? { profile: profile || undefined, job: jobId } : { profile: profile || undefined }),
        w.retried, loadHealth);
    }

    var o = overview || { profiles: [profile || "default"], scopes: [] };
    var scopeOptions = [{ value: "owner", label: w.owner }, { value: "all", label: w.allScopes }].concat(
      (o.scopes || []).filter(function (x) { return x.scope; }).map(function (x) {
        return { value: x.scope, label: x.scope + " (" + x.memories + ")" };
      }));
    var items = (listing && listing.items) || [];
    var total = listing ? listing.total : 0;

    return h("div", { className: "automem-tab", "data-testid": "automem-tab" },
      h("header", { className: "automem-head" },
        h("div", null,
          h("h2", { className: "automem-h2" }, w.title),
          h("p", { className: "automem-muted" }, w.subtitle)),
        h(Button, { size: "sm", onClick: refresh }, w.refresh)),
      h(Card, { className: "automem-card" }, h(CardContent, { className: "automem-card-body automem-toolbar" },
        h("form", {
          className: "automem-search", role: "search",
          onSubmit: function (e) { e.preventDefault(); setSearched(text.trim()); setOffset(0); },
        },
          h(Input, { type: "search", value: text, placeholder: w.search + " ( / )", "aria-label": w.search,
            maxLength: 500, "data-testid": "automem-search", className: "automem-search-input",
            onChange: function (e) { setText(e.target.value); },
            onKeyDown: function (e) { if (e.key === "Escape") { setText(""); setSearched(""); } } }),
          h(Button, { type: "submit", size: "sm" }, w.searchButton),
          searched ? h(Button, { type: "button", size: "sm", ghost: true,
            onClick: function () { setText(""); setSearched(""); } }, w.clear) : null),
        h("div", { className: "automem-filters" },
          h(Choice, { label: w.profile, value: profile || o.profile || "default", testid: "automem-profile",
            options: (o.profiles || []).map(function (p) { return { value: p, label: p }; }),
            onChange: function (v) { setProfile(v); setOffset(0); setSelected(null); setDetail(null); } }),
          h(Choice, { label: w.scope, value: filters.scope, testid: "automem-scope", options: scopeOptions,
            onChange: function (v) { setFilter("scope", v); } }),
          h(Choice, { label: w.category, value: filters.category, testid: "automem-category", options: [
            { value: "all", label: w.all }, { value: "persona", label: w.persona },
            { value: "episodic", label: w.episodic }, { value: "instruction", label: w.instruction }],
            onChange: function (v) { setFilter("category", v); } }),
          searched ? null : h(Choice, { label: w.status, value: filters.status, testid: "automem-status", options: [
            { value: "active", label: w.active }, { value: "superseded", label: w.superseded },
            { value: "forgotten", label: w.forgotten }], onChange: function (v) { setFilter("status", v); } }),
          searched ? null : h("label", { className: "automem-check" },
            h("input", { type: "checkbox", checked: filters.pinned, "data-testid": "automem-pinned",
              onChange: function (e) { setFilter("pinned", e.target.checked); } }), " " + w.pinnedOnly)))),
      error ? h("div", { className: "automem-error", role: "alert", "data-testid": "automem-error" },
        (listing ? "" : w.loadFailed) + error) : null,
      notice ? h("div", { className: "automem-notice", role: "status" }, notice) : null,
      h("div", { className: "automem-main" + (detail ? " automem-main-split" : "") },
        h("section", { className: "automem-list", "aria-label": w.title, "aria-busy": loading ? "true" : "false" },
          h("div", { className: "automem-summary automem-muted", "data-testid": "automem-summary" },
            loading || (listing && listing.query !== searched) ? w.loading : searched
              ? total + " " + w.results + " “" + searched + "”"
              : (total ? (offset + 1) + "–" + (offset + items.length) + " " + w.of + " " + total : "")),
          items.length ? h("ul", { className: "automem-rows", "data-testid": "automem-rows" }, items.map(function (m) {
            return h(MemoryRow, { key: m.id, memory: m, words: w, profile: profile, selected: m.id === selected,
              onOpen: function (id) { setNotice(""); open(id); }, onKeyDown: moveFocus });
          })) : (listing ? h("p", { className: "automem-empty" }, searched ? w.noResults : w.noMemories) : null),
          !searched && total > PAGE ? h("div", { className: "automem-pager" },
            h(Button, { size: "sm", disabled: offset === 0, onClick: function () { setOffset(Math.max(0, offset - PAGE)); } }, w.prev),
            h(Button, { size: "sm", disabled: offset + PAGE >= total, onClick: function () { setOffset(offset + PAGE); } }, w.next))
            : null),
        detail ? h(Detail, { detail: detail, words: w, busy: busy, confirming: confirming, onOpen: open,
          onClose: closeDetail, onPin: pin, editing: editing,
          onEdit: function () { setConfirming(false); setEditing(true); },
          onSaveEdit: saveEdit, onCancelEdit: function () { setEditing(false); },
          onAskForget: function () { setEditing(false); setConfirming(true); },
          onCancel: function () { setConfirming(false); }, onForget: forget }) : null),
      h(Health, { health: health, words: w, busy: busy, onRetry: retry, onRefresh: loadHealth }),
      h("p", { className: "automem-muted automem-keys" }, w.shortcuts));
  }

  // A rendering error shows its message and a way back, never a blank tab.
  class Boundary extends React.Component {
    constructor(props) { super(props); this.state = { error: null }; }
    static getDerivedStateFromError(error) { return { error: error }; }
    render() {
      var self = this;
      if (this.state.error) {
        return h("div", { className: "automem-error", role: "alert" },
          "The Memory tab hit an error: " + String(this.state.error && this.state.error.message || this.state.error) + " ",
          h("button", { type: "button", className: "automem-plain-button",
            onClick: function () { self.setState({ error: null }); } }, "Reload view"));
      }
      return this.props.children;
    }
  }

  // Keyed by the address's profile: when the dashboard's own profile picker changes ?profile=, the tab starts over
  // for that profile.
  function MemoryTab() { return h(Boundary, { key: urlProfile() || "-" }, h(MemoryPage)); }

  window.__HERMES_PLUGINS__.register("automem", MemoryTab);
})();
