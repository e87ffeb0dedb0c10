// The upload page of a version (templates/publishing/version.html): the archive goes from the
// browser straight to the version's presigned S3 link (a PUT, with a progress bar), then the
// page polls the UI's own status endpoint until the ingest is ok or refused. The page's CSP
// lets it connect to that link's origin only. Without this script the form stays hidden and
// the page gives the curl command.
(function () {
  "use strict";

  var POLL_MS = 1000;
  var POLL_LIMIT = 180; // three minutes, then the page says to reload it later

  function start() {
    var box = document.getElementById("ingest");
    if (!box) return;
    var label = document.getElementById("status-label");
    var detail = document.getElementById("status-detail");
    var polls = 0;
    var polling = false;

    function show(state) {
      label.textContent = state.label;
      detail.textContent = state.error || (state.settled ? "" : "Being ingested.");
      if (state.status === "ok") {
        // Published: the link takes nothing more, so the upload is put away.
        var section = document.getElementById("upload-section");
        if (section) section.hidden = true;
        detail.textContent = "Published: terraform can install it now.";
        // The links to the module's page and this version's (in the page, hidden until now).
        var links = document.getElementById("published-links");
        if (links) links.hidden = false;
      }
      box.setAttribute("data-status", state.status);
      box.classList.remove("ok", "bad", "warn");
      box.classList.add(state.status === "ok" ? "ok" : state.status.indexOf("failed") !== -1 ? "bad" : "warn");
    }

    function poll() {
      if (polling) return;
      polling = true;
      polls = 0;
      (function again() {
        fetch(box.getAttribute("data-status-url"), { credentials: "same-origin", headers: { Accept: "application/json" } })
          .then(function (reply) {
            if (!reply.ok) throw new Error("HTTP " + reply.status);
            return reply.json();
          })
          .then(function (state) {
            show(state);
            polls += 1;
            if (state.settled) { polling = false; return; }
            if (polls >= POLL_LIMIT) {
              detail.textContent = "Still being ingested: reload this page later.";
              polling = false;
              return;
            }
            setTimeout(again, POLL_MS);
          })
          .catch(function () {
            detail.textContent = "The status could not be read: reload this page.";
            polling = false;
          });
      })();
    }

    var form = document.getElementById("upload-form");
    if (form) enhanceUpload(form, poll);
    var status = box.getAttribute("data-status");
    if (box.getAttribute("data-settled") === "false" && (status !== "pending" || !form)) poll();
  }

  function enhanceUpload(form, poll) {
    var input = form.querySelector("input[type=file]");
    var bar = form.querySelector("progress");
    var message = document.getElementById("upload-message");
    var button = form.querySelector("button[type=submit]");
    form.hidden = false;

    function say(text) { message.textContent = text; }

    form.addEventListener("submit", function (event) {
      event.preventDefault();
      var file = input.files && input.files[0];
      if (!file) { say("Choose the version's .tar.gz archive first."); return; }
      if (!/\.(tar\.gz|tgz)$/i.test(file.name)) { say("The archive must be a .tar.gz file."); return; }
      var request = new XMLHttpRequest();
      request.open("PUT", form.getAttribute("data-upload"));
      // What the README's curl command sends: S3 stores it as it comes.
      request.setRequestHeader("Content-Type", "application/octet-stream");
      request.upload.addEventListener("progress", function (progress) {
        if (progress.lengthComputable) {
          bar.value = Math.round((progress.loaded / progress.total) * 100);
          bar.textContent = bar.value + " %";
        }
      });
      request.addEventListener("load", function () {
        button.disabled = false;
        if (request.status >= 200 && request.status < 300) {
          bar.value = 100;
          bar.textContent = "100 %";
          say("Uploaded " + file.name + ". It is being checked and ingested.");
          poll();
        } else {
          say("The storage refused the upload (HTTP " + request.status + "): reload this page for a fresh link and try again.");
        }
      });
      request.addEventListener("error", function () {
        button.disabled = false;
        say("The upload failed: the storage could not be reached, or it does not accept uploads from this site.");
      });
      button.disabled = true;
      bar.value = 0;
      say("Uploading " + file.name + "…");
      request.send(file);
    });
  }

  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", start);
  else start();
})();
