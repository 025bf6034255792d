// Scroll the highlighted transcript messages into view inside their column (after a full
// load and after each htmx swap). No build step: plain browser JavaScript.
function synixScrollToHighlight() {
  var first = document.querySelector("#col-detail .msg.hl");
  if (first) { first.scrollIntoView({block: "start"}); }
}
document.addEventListener("DOMContentLoaded", synixScrollToHighlight);
document.addEventListener("htmx:afterSettle", synixScrollToHighlight);
