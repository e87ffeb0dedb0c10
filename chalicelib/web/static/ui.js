// Progressive enhancement only: without this script every section of a module page is shown
// (the tab links jump to them) and the usage snippet can be selected by hand.
(function () {
  "use strict";

  function enhanceTabs(root) {
    var nav = root.querySelector(".tab-links");
    var links = nav ? Array.prototype.slice.call(nav.querySelectorAll("a[href^='#']")) : [];
    var panels = links.map(function (a) { return document.getElementById(a.getAttribute("href").slice(1)); });
    if (!links.length || panels.indexOf(null) !== -1) return;
    var list = document.createElement("div");
    list.setAttribute("role", "tablist");
    list.setAttribute("aria-label", nav.getAttribute("aria-label") || "Sections");
    var tabs = links.map(function (a, i) {
      var tab = document.createElement("button");
      tab.type = "button";
      tab.id = "tab-" + panels[i].id;
      tab.textContent = a.textContent;
      tab.setAttribute("role", "tab");
      tab.setAttribute("aria-controls", panels[i].id);
      panels[i].setAttribute("role", "tabpanel");
      panels[i].setAttribute("aria-labelledby", tab.id);
      panels[i].setAttribute("tabindex", "0");
      list.appendChild(tab);
      return tab;
    });
    function select(index, focus) {
      tabs.forEach(function (tab, i) {
        var on = i === index;
        tab.setAttribute("aria-selected", on ? "true" : "false");
        tab.tabIndex = on ? 0 : -1;
        panels[i].hidden = !on;
      });
      if (focus) tabs[index].focus();
    }
    tabs.forEach(function (tab, i) {
      tab.addEventListener("click", function () {
        select(i, false);
        history.replaceState(null, "", "#" + panels[i].id);
      });
      tab.addEventListener("keydown", function (event) {
        var next = { ArrowRight: i + 1, ArrowLeft: i - 1, Home: 0, End: tabs.length - 1 }[event.key];
        if (next === undefined) return;
        event.preventDefault();
        select((next + tabs.length) % tabs.length, true);
      });
    });
    nav.replaceWith(list);
    root.classList.add("enhanced");
    var wanted = panels.findIndex(function (p) { return "#" + p.id === location.hash; });
    select(wanted === -1 ? 0 : wanted, false);
  }

  function enhanceCopy(button) {
    var source = document.getElementById(button.getAttribute("data-copy"));
    var status = button.parentNode.querySelector(".copy-status");
    if (!source) return;
    button.hidden = false;
    button.addEventListener("click", function () {
      var text = source.textContent;
      function done(message) { if (status) status.textContent = message; }
      if (navigator.clipboard && navigator.clipboard.writeText) {
        navigator.clipboard.writeText(text).then(
          function () { done("Copied to the clipboard."); },
          function () { done("Copy failed: select the text and copy it."); }
        );
      } else {
        done("Copy is not available here: select the text and copy it.");
      }
    });
  }

  // A box that scrolls sideways (tables, README tables) gets a line above it saying so, shown
  // while its content is wider than it (checked again when the window changes size or a tab
  // shows a hidden box).
  function hintScrolling() {
    var boxes = document.querySelectorAll(".scroll-box, .table-scroll");
    function check() {
      Array.prototype.forEach.call(boxes, function (box) {
        var hint = box.previousElementSibling;
        if (!hint || !hint.classList.contains("scroll-hint")) {
          hint = document.createElement("p");
          hint.className = "scroll-hint";
          hint.setAttribute("aria-hidden", "true"); // the box's own label says it scrolls
          hint.textContent = "Scroll sideways for more \u2192";
          box.parentNode.insertBefore(hint, box);
        }
        hint.hidden = box.scrollWidth <= box.clientWidth + 1;
      });
    }
    check();
    window.addEventListener("resize", check);
    function onTab(event) {
      if (event.target.closest && event.target.closest("[role=tab]")) check();
    }
    document.addEventListener("click", onTab);
    document.addEventListener("keyup", onTab);
  }

  function start() {
    Array.prototype.forEach.call(document.querySelectorAll("[data-tabs]"), enhanceTabs);
    Array.prototype.forEach.call(document.querySelectorAll("button[data-copy]"), enhanceCopy);
    hintScrolling();
  }

  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", start);
  else start();
})();
