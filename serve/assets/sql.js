// The SQL page: sends the query to /api/sql and shows the rows as a table.
(function () {
  const form = document.getElementById("form");
  const query = document.getElementById("query");
  const status = document.getElementById("status");
  const result = document.getElementById("result");

  function cell(v) {
    const td = document.createElement("td");
    if (v === null) {
      td.textContent = "NULL";
      td.className = "null";
    } else if (typeof v === "object") {
      td.textContent = JSON.stringify(v);
    } else {
      td.textContent = String(v);
    }
    return td;
  }

  function show(answer) {
    const table = document.createElement("table");
    const head = table.createTHead().insertRow();
    for (const c of answer.columns || []) {
      const th = document.createElement("th");
      th.textContent = c.name;
      th.title = c.type;
      head.appendChild(th);
    }
    const body = table.createTBody();
    for (const row of answer.rows) {
      const tr = body.insertRow();
      for (const v of row) tr.appendChild(cell(v));
    }
    result.replaceChildren(table);
    let text = answer.rows.length + (answer.rows.length === 1 ? " row" : " rows");
    if (answer.truncated) text += " (more rows not shown: narrow the query or add a LIMIT)";
    for (const w of answer.warnings || []) text += "\n" + w;
    status.textContent = text;
    status.className = "";
  }

  async function run(event) {
    if (event) event.preventDefault();
    status.textContent = "running...";
    status.className = "";
    try {
      const res = await fetch("/api/sql?q=" + encodeURIComponent(query.value));
      const answer = await res.json();
      if (!res.ok) {
        status.textContent = answer.error;
        status.className = "error";
        result.replaceChildren();
        return;
      }
      show(answer);
    } catch (e) {
      status.textContent = String(e);
      status.className = "error";
    }
  }

  form.addEventListener("submit", run);
  // /sql?q=QUERY opens with that query run.
  const asked = new URLSearchParams(location.search).get("q");
  if (asked) {
    query.value = asked;
    run();
  }
  query.addEventListener("keydown", (e) => {
    if (e.key === "Enter" && (e.ctrlKey || e.metaKey)) run(e);
  });
})();
