// minibroker's web console: a page per hash route, drawn with DOM nodes and textContent only (a destination's name
// or a message's body is never read as HTML). Mutations are POSTs carrying the page's CSRF token.
"use strict";

const TOKEN = document.querySelector('meta[name="csrf-token"]').content;
const main = document.getElementById("main");
const statusLine = document.getElementById("status");
const POLL_MS = 2000;
let pollTimer = null;

// -- DOM helpers ----------------------------------------------------------------------------------------------------

function el(tag, props, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(props || {})) {
    if (key === "class") node.className = value;
    else if (key.startsWith("on")) node.addEventListener(key.slice(2), value);
    else if (value !== undefined && value !== null) node.setAttribute(key, value);
  }
  for (const child of children.flat()) {
    if (child === null || child === undefined) continue;
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return node;
}

function cell(value, cls) {
  return el("td", cls ? { class: cls } : {}, value === null || value === undefined ? "" : value);
}

function link(href, text) {
  return el("a", { href }, text);
}

function when(seconds) {
  if (!seconds) return "";
  const d = new Date(seconds * 1000);
  return isNaN(d) ? String(seconds) : d.toISOString().replace("T", " ").replace("Z", "");
}

function say(text, isError) {
  statusLine.textContent = text;
  statusLine.className = isError ? "error" : "";
}

// -- filtering and sorting a listing ---------------------------------------------------------------------------------

// what each listing shows, kept across its live redraws: the filter's text, the column sorted on and its direction
const views = {};

function cellKey(td) {
  const text = td.textContent.trim();
  const number = Number(text);
  return text !== "" && !isNaN(number) ? number : text.toLowerCase();
}

// shows the rows of `table` whose text holds the filter, ordered by the chosen column (numbers as numbers)
function applyView(table) {
  const view = views[table.id] || {};
  const body = table.tBodies[0];
  const rows = [...body.rows];
  const needle = (view.filter || "").toLowerCase();
  for (const row of rows) row.hidden = needle !== "" && !row.textContent.toLowerCase().includes(needle);
  const headings = [...table.tHead.rows[0].cells];
  headings.forEach((th, i) => {
    if (i === view.column) th.setAttribute("aria-sort", view.descending ? "descending" : "ascending");
    else th.removeAttribute("aria-sort");
  });
  if (view.column !== undefined) {
    const sign = view.descending ? -1 : 1;
    rows.sort((a, b) => {
      const x = cellKey(a.cells[view.column]);
      const y = cellKey(b.cells[view.column]);
      if (typeof x !== typeof y) return sign * (typeof x === "number" ? -1 : 1);
      return sign * (x < y ? -1 : x > y ? 1 : 0);
    });
    body.append(...rows);
  }
  const shown = rows.filter((row) => !row.hidden).length;
  const count = document.getElementById(`count-${table.id}`);
  if (count) count.textContent = needle ? `${shown} of ${rows.length} shown` : "";
}

// a table with a filter box above it and a sort button in each heading (click again: the other direction)
function sortable(table, label) {
  const id = table.id;
  const view = (views[id] = views[id] || {});
  [...table.tHead.rows[0].cells].forEach((th, i) => {
    if (!th.textContent) return;
    const button = el(
      "button",
      {
        class: "sort",
        type: "button",
        id: `sort-${id}-${i}`,
        title: `Sort by ${th.textContent}`,
        onclick: () => {
          view.descending = view.column === i ? !view.descending : false;
          view.column = i;
          applyView(table);
        },
      },
      th.textContent,
    );
    th.replaceChildren(button);
  });
  const filter = el("input", {
    type: "search",
    class: "filter",
    id: `filter-${id}`,
    "aria-label": `Filter ${label}`,
    placeholder: `Filter ${label}`,
    oninput: () => {
      view.filter = filter.value;
      applyView(table);
    },
  });
  filter.value = view.filter || "";
  applyView(table);
  return el("div", { class: "listing" }, el("div", { class: "filters" }, filter, el("span", { class: "note", id: `count-${id}` })), el("div", { class: "scroll" }, table));
}

// -- the API --------------------------------------------------------------------------------------------------------

// URLs are built on location.origin: a page opened as http://user:password@host/ has a base URL with credentials,
// from which fetch() refuses to build a request (the browser's login cache still authenticates it)
function apiUrl(path) {
  return new URL(path, location.origin);
}

async function getJson(path) {
  const answer = await fetch(apiUrl(path), { headers: { Accept: "application/json" }, credentials: "same-origin" });
  if (!answer.ok) throw new Error(`${answer.status}: ${(await answer.text()).slice(0, 200)}`);
  return answer.json();
}

async function act(action, body) {
  const answer = await fetch(apiUrl(`/console/api/${action}`), {
    method: "POST",
    credentials: "same-origin",
    headers: { "Content-Type": "application/json", "X-Minibroker-Csrf": TOKEN },
    body: JSON.stringify(body),
  });
  const text = await answer.text();
  if (!answer.ok) throw new Error(`${answer.status}: ${text.slice(0, 300)}`);
  return JSON.parse(text);
}

function confirmAction(question) {
  const dialog = document.getElementById("confirm");
  document.getElementById("confirm-text").textContent = question;
  return new Promise((resolve) => {
    dialog.addEventListener("close", () => resolve(dialog.returnValue === "ok"), { once: true });
    dialog.returnValue = "cancel";
    dialog.showModal();
    document.getElementById("confirm-cancel").focus();
  });
}

async function guarded(question, action, body, after) {
  if (!(await confirmAction(question))) return;
  try {
    const result = await act(action, body);
    say(`${action}: ${JSON.stringify(result)}`);
    if (after) after(result);
  } catch (error) {
    say(`${action} failed: ${error.message}`, true);
  }
}

// -- pages ----------------------------------------------------------------------------------------------------------

function queueHref(name) {
  return `#/queue/${encodeURIComponent(name)}`;
}

function messageHref(queue, id) {
  return `#/message/${encodeURIComponent(queue)}/${encodeURIComponent(id)}`;
}

async function showDestinations() {
  const data = await getJson("/console/api/destinations");
  const queues = el(
    "table",
    { class: "wide", id: "queues" },
    el(
      "thead",
      {},
      el(
        "tr",
        {},
        el("th", {}, "Queue"),
        el("th", { class: "num" }, "Size"),
        el("th", { class: "num opt" }, "In flight"),
        el("th", { class: "num" }, "Enqueued"),
        el("th", { class: "num" }, "Dequeued"),
        el("th", { class: "num opt" }, "Expired"),
        el("th", { class: "num" }, "Consumers"),
        el("th", { class: "num opt" }, "Producers"),
      ),
    ),
    el(
      "tbody",
      {},
      data.queues.map((q) =>
        el(
          "tr",
          { "data-queue": q.name },
          el("td", {}, link(queueHref(q.name), q.name), q.dlq ? [" ", el("span", { class: "badge" }, "DLQ")] : []),
          cell(q.size, "num size"),
          cell(q.inflight, "num opt"),
          cell(q.enqueued, "num"),
          cell(q.dequeued, "num"),
          cell(q.expired, "num opt"),
          cell(q.consumers, "num"),
          cell(q.producers, "num opt"),
        ),
      ),
    ),
  );
  const topics = el(
    "table",
    { id: "topics" },
    el(
      "thead",
      {},
      el("tr", {}, ["Topic", "Enqueued", "Dequeued", "Consumers", "Producers"].map((h, i) => el("th", i ? { class: "num" } : {}, h))),
    ),
    el(
      "tbody",
      {},
      data.topics.map((t) =>
        el("tr", {}, cell(t.name), cell(t.enqueued, "num"), cell(t.dequeued, "num"), cell(t.consumers, "num"), cell(t.producers, "num")),
      ),
    ),
  );
  const durables = el(
    "table",
    { id: "durables" },
    el("thead", {}, el("tr", {}, ["Client id", "Subscription", "Topic", "Selector", "Active", "Pending"].map((h) => el("th", {}, h)))),
    el(
      "tbody",
      {},
      data.durables.map((d) =>
        el("tr", {}, cell(d.clientId), cell(d.name), cell(d.topic), cell(d.selector), cell(d.active ? "yes" : "no"), cell(d.pending, "num")),
      ),
    ),
  );
  main.replaceChildren(
    el("h2", {}, `Queues on ${data.broker.name} (ActiveMQ ${data.broker.version})`),
    data.queues.length ? sortable(queues, "queues") : el("p", { class: "note", id: "no-queues" }, "No queues yet."),
    el("h2", {}, "Topics"),
    data.topics.length ? sortable(topics, "topics") : el("p", { class: "note" }, "No topics yet."),
    el("h2", {}, "Durable subscriptions"),
    data.durables.length ? sortable(durables, "subscriptions") : el("p", { class: "note" }, "None."),
  );
}

async function showQueue(name, page) {
  const data = await getJson(`/console/api/messages?queue=${encodeURIComponent(name)}&page=${page}`);
  const listing = await getJson("/console/api/destinations");
  const row = listing.queues.find((q) => q.name === name) || {};
  const rows = data.messages.map((m) =>
    el(
      "tr",
      {},
      el("td", { class: "mono" }, link(messageHref(name, m.id), m.id)),
      cell(when(m.timestamp), "opt"),
      cell(m.priority, "num"),
      cell(m.persistent ? "persistent" : "non-persistent", "opt"),
      cell(m.type, "opt"),
      cell(Object.entries(m.properties).map(([k, v]) => `${k}=${v}`).join(", "), "opt"),
      cell(m.preview, "preview"),
      el(
        "td",
        {},
        el(
          "button",
          {
            class: "danger",
            type: "button",
            id: `delete-${m.id}`,
            "aria-label": `Delete message ${m.id}`,
            onclick: () => guarded(`Delete message ${m.id}?`, "delete", { queue: name, id: m.id }, () => render()),
          },
          "Delete",
        ),
      ),
    ),
  );
  const pages = Math.max(1, Math.ceil(data.browsable / data.pageSize));
  const actions = el(
    "div",
    { class: "actions" },
    el(
      "button",
      {
        class: "danger",
        id: "purge",
        onclick: () => guarded(`Purge every message of ${name}?`, "purge", { queue: name }, () => render()),
      },
      "Purge",
    ),
    row.dlq
      ? el(
          "button",
          { id: "retry-all", onclick: () => guarded(`Retry every message of ${name} to its original destination?`, "retry", { queue: name }, () => render()) },
          "Retry all",
        )
      : null,
  );
  main.replaceChildren(
    el("h2", {}, "Queue ", el("span", { id: "queue-name" }, name), row.dlq ? [" ", el("span", { class: "badge" }, "DLQ")] : []),
    el("p", {}, `${data.size} messages (size), ${row.inflight ?? 0} in flight, ${row.consumers ?? 0} consumers.`),
    actions,
    sortable(
      el(
        "table",
        { class: "wide", id: "messages" },
        el(
          "thead",
          {},
          el(
            "tr",
            {},
            el("th", {}, "Message id"),
            el("th", { class: "opt" }, "Timestamp"),
            el("th", { class: "num" }, "Priority"),
            el("th", { class: "opt" }, "Delivery"),
            el("th", { class: "opt" }, "Type"),
            el("th", { class: "opt" }, "Properties"),
            el("th", {}, "Body"),
            el("th", {}, ""),
          ),
        ),
        el("tbody", {}, rows),
      ),
      "messages on this page",
    ),
    el(
      "div",
      { class: "actions" },
      page > 0 ? link(`${queueHref(name)}?page=${page - 1}`, "← Previous") : null,
      el("span", {}, ` page ${page + 1} of ${pages} `),
      page + 1 < pages ? link(`${queueHref(name)}?page=${page + 1}`, "Next →") : null,
    ),
  );
}

// each row comes named, coloured and worded by the server (plugins/timeline.py, which the pytest plugin's
// --minibroker-report draws from too): this only puts it on the page
function timeline(history, kept) {
  if (!kept) return el("p", { class: "note" }, "This broker keeps no delivery history (its history_limit is 0).");
  if (!history.length) return el("p", { class: "note" }, "No history recorded for this message.");
  return el(
    "ol",
    { class: "timeline", id: "timeline" },
    history.map((h) =>
      el(
        "li",
        h.kind ? { class: h.kind, "data-event": h.event } : { "data-event": h.event },
        el("span", { class: "when" }, h.when),
        el("span", { class: "event" }, h.event),
        h.text ? ` \u2014 ${h.text}` : "",
      ),
    ),
  );
}

async function showMessage(queue, id) {
  const data = await getJson(`/console/api/message?queue=${encodeURIComponent(queue)}&id=${encodeURIComponent(id)}`);
  const listing = await getJson("/console/api/destinations");
  const isDlq = (listing.queues.find((q) => q.name === queue) || {}).dlq;
  const m = data.message;
  const back = () => {
    location.hash = queueHref(queue);
  };
  const parts = [el("h2", {}, "Message ", el("span", { class: "mono", id: "message-id" }, id)), el("p", {}, link(queueHref(queue), `← ${queue}`))];
  if (m) {
    const target = el("input", { id: "target", "aria-label": "Destination queue", placeholder: "queue name" });
    parts.push(
      el(
        "div",
        { class: "actions" },
        el("button", { class: "danger", id: "delete", onclick: () => guarded(`Delete message ${id}?`, "delete", { queue, id }, back) }, "Delete"),
        target,
        el(
          "button",
          {
            id: "move",
            onclick: () => guarded(`Move message ${id} to ${target.value}?`, "move", { queue, id, to: target.value }, back),
          },
          "Move",
        ),
        el("button", { id: "copy", onclick: () => guarded(`Copy message ${id} to ${target.value}?`, "copy", { queue, id, to: target.value }) }, "Copy"),
        isDlq
          ? el("button", { id: "retry", onclick: () => guarded(`Retry message ${id} to ${m.originalDestination}?`, "retry", { queue, id }, back) }, "Retry")
          : null,
      ),
      el(
        "dl",
        { class: "headers" },
        [
          ["Destination", m.destination],
          ["Timestamp", when(m.timestamp)],
          ["Expiration", m.expiration ? when(m.expiration) : "never"],
          ["Priority", m.priority],
          ["Delivery mode", m.persistent ? "persistent" : "non-persistent"],
          ["Type", m.type],
          ["Correlation id", m.correlationId],
          ["Reply to", m.replyTo],
          ["Group", m.groupId],
          ["Original destination", m.originalDestination],
          ["Message class", m.kind],
          ["Body size", m.size],
        ].flatMap(([k, v]) => (v === null || v === undefined || v === "" ? [] : [el("dt", {}, k), el("dd", {}, v)])),
      ),
      el("h2", {}, "Properties"),
      Object.keys(m.properties).length
        ? el("table", { id: "properties" }, el("tbody", {}, Object.entries(m.properties).map(([k, v]) => el("tr", {}, cell(k, "mono"), cell(v, "mono")))))
        : el("p", { class: "note" }, "None."),
      el("h2", {}, "Body"),
      el("pre", { class: "body", id: "body" }, m.body),
    );
  } else {
    parts.push(el("p", { class: "note" }, "The message is no longer in this queue."));
  }
  parts.push(el("h2", {}, "Delivery history"), timeline(data.history, data.historyKept));
  main.replaceChildren(...parts);
}

// -- who is connected, what they consume and produce, what the scheduler holds ------------------------------------

// a column's heading takes its alignment and its hiding on a narrow window, not the cells' monospace
function headingClass(cls) {
  return (cls || "").split(" ").filter((c) => c === "num" || c === "opt").join(" ");
}

// a table of `items`, one column per [heading, class, value-of-item] (values are text or nodes, never HTML)
function dataTable(id, columns, items) {
  return sortable(
    el(
      "table",
      { class: "wide", id },
      el("thead", {}, el("tr", {}, columns.map(([heading, cls]) => el("th", { class: headingClass(cls) }, heading)))),
      el(
        "tbody",
        {},
        items.map((item) => el("tr", {}, columns.map(([, cls, value]) => cell(value(item), cls)))),
      ),
    ),
    id,
  );
}

function destinationLink(item) {
  if (!item.destination) return "(anonymous: a destination per message)";
  if (item.destinationKind === "queue") return link(queueHref(item.destinationName), item.destination);
  return item.destination;
}

function connectionName(item) {
  return item.clientId ? `${item.connectionId} (${item.clientId})` : String(item.connectionId);
}

function listing(title, id, rows, none, columns) {
  main.replaceChildren(
    el("h2", {}, title),
    rows.length ? dataTable(id, columns, rows) : el("p", { class: "note", id: `no-${id}` }, none),
  );
}

async function showConnections() {
  const data = await getJson("/console/api/connections");
  listing("Connections", "connections", data.connections, "No client is connected.", [
    ["Connection", "mono", (c) => c.name],
    ["Client id", "", (c) => c.clientId],
    ["User", "opt", (c) => c.user],
    ["Protocol", "", (c) => c.protocol || (c.remote ? "remote" : "in process")],
    ["Remote address", "opt mono", (c) => c.remoteAddress],
    ["Consumers", "num", (c) => c.consumers],
    ["Producers", "num", (c) => c.producers],
    ["Transactions", "num opt", (c) => c.transactions],
  ]);
}

async function showConsumers() {
  const data = await getJson("/console/api/consumers");
  listing("Consumers", "consumers", data.consumers, "No consumers.", [
    ["Consumer", "num", (c) => c.id],
    ["Connection", "opt", connectionName],
    ["Destination", "", destinationLink],
    ["Selector", "opt mono", (c) => c.selector],
    ["Kind", "opt", (c) => (c.durable ? `durable ${c.durable}` : c.browser ? "browser" : c.exclusive ? "exclusive" : "")],
    ["Prefetch", "num opt", (c) => c.prefetch],
    ["In flight", "num", (c) => c.inFlight],
    ["Dispatched", "num", (c) => c.dispatched],
  ]);
}

async function showProducers() {
  const data = await getJson("/console/api/producers");
  listing("Producers", "producers", data.producers, "No producers.", [
    ["Producer", "num", (p) => p.id],
    ["Connection", "", connectionName],
    ["Destination", "", destinationLink],
  ]);
}

async function showScheduled() {
  const data = await getJson("/console/api/scheduled");
  listing("Scheduled jobs", "scheduled", data.jobs, "No job is scheduled.", [
    ["Job id", "mono", (j) => j.jobId],
    ["Next", "", (j) => when(j.next)],
    ["Destination", "", destinationLink],
    ["Delay (ms)", "num opt", (j) => j.delay],
    ["Period (ms)", "num opt", (j) => j.period],
    ["Repeat", "num opt", (j) => j.repeat],
    ["Cron", "opt mono", (j) => j.cron],
    ["Redelivery", "num opt", (j) => j.redelivery || ""],
    ["Body", "preview", (j) => j.preview],
    [
      "",
      "",
      (j) =>
        el(
          "button",
          {
            class: "danger",
            type: "button",
            id: `unschedule-${j.jobId}`,
            "aria-label": `Remove job ${j.jobId}`,
            onclick: () => guarded(`Remove the scheduled job ${j.jobId}?`, "unschedule", { jobId: j.jobId }, () => render()),
          },
          "Remove",
        ),
    ],
  ]);
}

function showSend() {
  const destination = el("input", { id: "send-destination", name: "destination", required: "", placeholder: "orders, or topic://prices" });
  const body = el("textarea", { id: "send-body", name: "body" });
  const properties = el("textarea", { id: "send-properties", name: "properties", placeholder: "name=value, one a line" });
  const priority = el("input", { id: "send-priority", type: "number", min: "0", max: "9", value: "4" });
  const persistent = el("input", { id: "send-persistent", type: "checkbox", checked: "" });
  const form = el(
    "form",
    {
      class: "send",
      id: "send-form",
      onsubmit: async (event) => {
        event.preventDefault();
        const props = {};
        for (const line of properties.value.split("\n")) {
          const at = line.indexOf("=");
          if (at > 0) props[line.slice(0, at).trim()] = line.slice(at + 1);
        }
        try {
          const result = await act("send", {
            destination: destination.value,
            body: body.value,
            properties: props,
            priority: Number(priority.value),
            persistent: persistent.checked,
          });
          say(`sent ${result.id}`);
        } catch (error) {
          say(`send failed: ${error.message}`, true);
        }
      },
    },
    el("label", {}, "Destination", destination),
    el("label", {}, "Body", body),
    el("label", {}, "Properties", properties),
    el("label", {}, "Priority", priority),
    el("label", {}, el("span", {}, "Persistent"), persistent),
    el("div", {}, el("button", { type: "submit", id: "send-submit" }, "Send")),
  );
  main.replaceChildren(el("h2", {}, "Send a message"), form);
}

// -- routing --------------------------------------------------------------------------------------------------------

const LISTINGS = { connections: showConnections, consumers: showConsumers, producers: showProducers, scheduled: showScheduled };

// what has the focus in the page, found again after a redraw (an id, or a link's address)
function focusKey(node) {
  if (!node || node === main || !main.contains(node)) return null;
  if (node.id) return `#${CSS.escape(node.id)}`;
  if (node.tagName === "A") return `a[href="${CSS.escape(node.getAttribute("href"))}"]`;
  return null;
}

async function render() {
  clearTimeout(pollTimer);
  const focused = focusKey(document.activeElement);
  const hash = location.hash || "#/";
  const [path, query] = hash.slice(1).split("?");
  const parts = path.split("/").slice(1).map(decodeURIComponent);
  const page = Number(new URLSearchParams(query || "").get("page") || 0);
  for (const a of document.querySelectorAll("nav a")) {
    const section = a.getAttribute("href").slice(2);
    if (section === (LISTINGS[parts[0]] || parts[0] === "send" ? parts[0] : "")) a.setAttribute("aria-current", "page");
    else a.removeAttribute("aria-current");
  }
  let poll = false;
  try {
    if (parts[0] === "queue" && parts[1] !== undefined) {
      await showQueue(parts[1], page);
      poll = true;
    } else if (parts[0] === "message" && parts.length >= 3) {
      await showMessage(parts[1], parts.slice(2).join("/"));
    } else if (parts[0] === "send") {
      showSend();
    } else if (LISTINGS[parts[0]]) {
      await LISTINGS[parts[0]]();
      poll = true;
    } else {
      await showDestinations();
      poll = true;
    }
    if (!statusLine.classList.contains("error")) statusLine.textContent = `updated ${new Date().toLocaleTimeString()}`;
    // a live redraw keeps a keyboard user's place
    if (focused) main.querySelector(focused)?.focus();
  } catch (error) {
    say(`failed: ${error.message}`, true);
  }
  if (poll) pollTimer = setTimeout(refresh, POLL_MS);
}

function refresh() {
  // a live refresh leaves the page alone while someone types or a dialog is open
  const typing = ["INPUT", "TEXTAREA", "SELECT"].includes(document.activeElement?.tagName);
  if (document.getElementById("confirm").open || typing) {
    pollTimer = setTimeout(refresh, POLL_MS);
    return;
  }
  statusLine.className = "";
  render();
}

window.addEventListener("hashchange", () => {
  statusLine.className = "";
  render().then(() => main.focus());
});
render();
