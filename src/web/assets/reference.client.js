// The API reference's browser side (/docs): draws an operation from /openapi.json when it is opened,
// and sends it from its "Try it" form. Nothing inline, nothing from another origin (the page's CSP).
(function () {
  "use strict";
  var TOKEN_KEY = "crewplane-reference-token";
  var documentPromise = null;

  function loadDocument() {
    if (!documentPromise) {
      documentPromise = fetch("/openapi.json", { headers: { accept: "application/json" } }).then(function (res) {
        if (!res.ok) throw new Error("GET /openapi.json answered " + res.status);
        return res.json();
      });
    }
    return documentPromise;
  }

  function el(tag, attrs, children) {
    var node = document.createElement(tag);
    Object.keys(attrs || {}).forEach(function (k) {
      if (k === "text") node.textContent = attrs[k];
      else node.setAttribute(k, attrs[k]);
    });
    (children || []).forEach(function (child) {
      if (child) node.appendChild(typeof child === "string" ? document.createTextNode(child) : child);
    });
    return node;
  }

  function schemaText(schema) {
    return JSON.stringify(schema || {}, null, 2);
  }

  function typeOf(schema) {
    if (!schema) return "";
    var parts = [];
    if (schema.type) parts.push(Array.isArray(schema.type) ? schema.type.join(" | ") : schema.type);
    if (schema.enum) parts.push("one of " + schema.enum.join(", "));
    if (schema.pattern) parts.push("pattern " + schema.pattern);
    if (schema.minimum !== undefined) parts.push("≥ " + schema.minimum);
    if (schema.maximum !== undefined) parts.push("≤ " + schema.maximum);
    if (schema.maxLength !== undefined) parts.push("≤ " + schema.maxLength + " chars");
    if (schema.default !== undefined) parts.push("default " + JSON.stringify(schema.default));
    return parts.join("; ");
  }

  // A skeleton body from a JSON schema: its required members, each with a value of its type.
  function example(schema, depth) {
    if (!schema || depth > 6) return null;
    if (schema.default !== undefined) return schema.default;
    if (schema.enum) return schema.enum[0];
    if (schema.const !== undefined) return schema.const;
    var options = schema.anyOf || schema.oneOf;
    if (options) return example(options[0], depth + 1);
    var type = Array.isArray(schema.type) ? schema.type[0] : schema.type;
    if (type === "object" || schema.properties) {
      var out = {};
      (schema.required || []).forEach(function (name) {
        out[name] = example((schema.properties || {})[name], depth + 1);
      });
      return out;
    }
    if (type === "array") return [];
    if (type === "integer" || type === "number") return schema.minimum !== undefined ? schema.minimum : 0;
    if (type === "boolean") return false;
    if (type === "string") return "";
    return null;
  }

  function parametersTable(parameters) {
    var rows = parameters.map(function (p) {
      return el("tr", {}, [
        el("td", {}, [el("code", { text: p.name })]),
        el("td", { text: p.in }),
        el("td", { text: p.required ? "yes" : "no" }),
        el("td", { text: [p.description, typeOf(p.schema)].filter(Boolean).join(" — ") }),
      ]);
    });
    var head = el("thead", {}, [el("tr", {}, ["Name", "In", "Required", "Schema"].map(function (h) { return el("th", { scope: "col", text: h }); }))]);
    return el("div", { class: "table-wrap" }, [el("table", {}, [head, el("tbody", {}, rows)])]);
  }

  function responsesList(responses) {
    return el(
      "dl",
      { class: "data reference-responses" },
      Object.keys(responses).map(function (status) {
        var r = responses[status];
        var content = r.content || {};
        var media = Object.keys(content);
        var schemas = media.map(function (type) {
          var block = el("details", {}, [el("summary", { text: type }), el("pre", {}, [el("code", { text: schemaText(content[type].schema) })])]);
          return block;
        });
        return el("div", {}, [el("dt", { text: status }), el("dd", {}, [r.description || ""].concat(schemas))]);
      }),
    );
  }

  function tryItForm(op, method, path) {
    var parameters = (op.parameters || []).filter(function (p) { return p.in === "path" || p.in === "query"; });
    var form = el("form", { class: "card try-it" });
    var fields = parameters.map(function (p) {
      var id = "try-" + Math.random().toString(36).slice(2);
      var input = el("input", { id: id, "data-in": p.in, "data-name": p.name, autocomplete: "off" });
      if (p.required) input.required = true;
      return el("p", {}, [el("label", { for: id, text: p.name + " (" + p.in + (p.required ? ", required" : "") + ")" }), input]);
    });
    fields.forEach(function (f) { form.appendChild(f); });
    var bodySchema = op.requestBody && op.requestBody.content && op.requestBody.content["application/json"];
    var textarea = null;
    if (bodySchema) {
      var bodyId = "try-body-" + Math.random().toString(36).slice(2);
      textarea = el("textarea", { id: bodyId, rows: "8", spellcheck: "false" });
      textarea.value = JSON.stringify(example(bodySchema.schema, 0), null, 2);
      form.appendChild(el("p", {}, [el("label", { for: bodyId, text: "JSON body" }), textarea]));
    }
    var output = el("pre", { class: "try-it-output", "aria-live": "polite" });
    form.appendChild(el("p", {}, [el("button", { type: "submit", text: "Send " + method.toUpperCase() + " " + path })]));
    form.appendChild(output);
    form.addEventListener("submit", function (event) {
      event.preventDefault();
      var url = path;
      var query = new URLSearchParams();
      form.querySelectorAll("input[data-in]").forEach(function (input) {
        if (input.value === "") return;
        if (input.getAttribute("data-in") === "path") url = url.replace("{" + input.getAttribute("data-name") + "}", encodeURIComponent(input.value));
        else query.append(input.getAttribute("data-name"), input.value);
      });
      if (query.toString()) url += "?" + query.toString();
      var headers = { accept: "application/json" };
      var token = sessionStorage.getItem(TOKEN_KEY);
      if (token) headers.authorization = "Bearer " + token;
      var init = { method: method.toUpperCase(), headers: headers };
      if (textarea) {
        headers["content-type"] = "application/json";
        init.body = textarea.value;
      }
      output.textContent = "Sending…";
      fetch(url, init)
        .then(function (res) {
          return res.text().then(function (text) {
            var shown = text;
            try { shown = JSON.stringify(JSON.parse(text), null, 2); } catch (e) { /* not JSON: as it came */ }
            output.textContent = res.status + " " + (res.headers.get("content-type") || "") + "\n\n" + shown;
          });
        })
        .catch(function (err) { output.textContent = "The request failed: " + err.message; });
    });
    return form;
  }

  function draw(details) {
    var body = details.querySelector(".operation-body");
    if (!body || body.getAttribute("data-drawn")) return;
    body.setAttribute("data-drawn", "1");
    body.textContent = "Loading…";
    loadDocument()
      .then(function (doc) {
        var path = details.getAttribute("data-path");
        var method = details.getAttribute("data-method");
        var op = ((doc.paths || {})[path] || {})[method];
        body.textContent = "";
        if (!op) {
          body.appendChild(el("p", { text: "This operation is not in the document." }));
          return;
        }
        if (op.description) body.appendChild(el("p", { class: "prose", text: op.description }));
        if (op.parameters && op.parameters.length) {
          body.appendChild(el("h3", { text: "Parameters" }));
          body.appendChild(parametersTable(op.parameters));
        }
        var json = op.requestBody && op.requestBody.content && op.requestBody.content["application/json"];
        if (json) {
          body.appendChild(el("h3", { text: "Request body (application/json)" }));
          body.appendChild(el("pre", {}, [el("code", { text: schemaText(json.schema) })]));
        }
        body.appendChild(el("h3", { text: "Responses" }));
        body.appendChild(responsesList(op.responses || {}));
        body.appendChild(el("h3", { text: "Try it" }));
        body.appendChild(tryItForm(op, method, path));
      })
      .catch(function (err) {
        body.removeAttribute("data-drawn");
        body.textContent = "Could not load the document: " + err.message;
      });
  }

  function start() {
    var token = document.getElementById("reference-bearer");
    if (token) {
      token.value = sessionStorage.getItem(TOKEN_KEY) || "";
      token.addEventListener("input", function () { sessionStorage.setItem(TOKEN_KEY, token.value); });
      token.form.addEventListener("submit", function (e) { e.preventDefault(); });
    }
    document.querySelectorAll("details.operation").forEach(function (details) {
      details.addEventListener("toggle", function () { if (details.open) draw(details); });
      if (details.open) draw(details);
    });
    var target = location.hash && document.getElementById(location.hash.slice(1));
    if (target && target.tagName === "DETAILS") target.open = true;
  }

  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", start);
  else start();
})();
