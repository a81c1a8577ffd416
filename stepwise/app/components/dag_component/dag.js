// The step DAG as a bidirectional Streamlit component, without streamlit-component-lib:
// it speaks the components v1 protocol (postMessage to the parent page) itself.
//   in:  "streamlit:render" with args {graph, selected, height}, where graph is a JSON string
//        of {nodes, edges, options, legend} (compared as it came: redrawn only when it changed);
//        or those four as args of their own (the Services page's hop DAG)
//   out: "streamlit:componentReady", "streamlit:setFrameHeight", and on a click
//        "streamlit:setComponentValue" with {step: <step id or null>, click: <unique token>};
//        a click on the node of folded steps sends its id ("collapsed"): the page unfolds it.
// Security: labels are drawn by vis-network on a canvas (font.multi off, so never markup);
// tooltips and the legend are built with textContent: no step text is ever parsed as HTML.
(function () {
  "use strict";

  var COLLAPSED = "collapsed"; // agent_core.dag.COLLAPSED_NODE: stands for folded steps.
  var graph = document.getElementById("graph");
  var legendBox = document.getElementById("legend");
  var network = null;
  var nodes = null;
  var edges = null;
  var drawn = null; // The graph string last drawn: redraw only when it changes.
  var lastLegend = null;
  var unfolding = null; // The ids drawn when the fold was clicked: show the steps it held.

  function send(type, fields) {
    var message = { isStreamlitMessage: true, type: type };
    for (var name in fields) {
      if (Object.prototype.hasOwnProperty.call(fields, name)) message[name] = fields[name];
    }
    window.parent.postMessage(message, "*");
  }

  function setHeight() {
    send("streamlit:setFrameHeight", { height: document.body.scrollHeight });
  }

  function tooltip(text) {
    var box = document.createElement("div");
    box.textContent = text;
    return box;
  }

  function visNode(node) {
    var copy = {};
    for (var name in node) {
      if (name !== "tip" && name !== "title") copy[name] = node[name];
    }
    if (typeof node.tip === "string" && node.tip) copy.title = tooltip(node.tip);
    return copy;
  }

  function drawLegend(items) {
    var key = JSON.stringify(items || []);
    if (key === lastLegend) return;
    lastLegend = key;
    while (legendBox.firstChild) legendBox.removeChild(legendBox.firstChild);
    (items || []).forEach(function (item) {
      var entry = document.createElement("span");
      entry.className = "item";
      var swatch = document.createElement("span");
      swatch.className = "swatch";
      swatch.style.background = String(item.color || "#ffffff");
      var label = document.createElement("span");
      label.textContent = String(item.label);
      if (item.meaning) entry.title = String(item.meaning); // An attribute: plain text.
      entry.appendChild(swatch);
      entry.appendChild(label);
      legendBox.appendChild(entry);
    });
  }

  // The left and right edges (canvas units) of the nodes whose rows lie within `rows` of
  // the newest step's row: what must stay in view beside it.
  function rowExtent(ids, newestY, rows) {
    var left = Infinity;
    var right = -Infinity;
    ids.forEach(function (id) {
      var box = network.getBoundingBox(id);
      if (Math.abs((box.top + box.bottom) / 2 - newestY) <= rows) {
        left = Math.min(left, box.left);
        right = Math.max(right, box.right);
      }
    });
    return { left: left, right: right };
  }

  // When fitting the whole graph made labels too small to read, show the newest step near
  // the bottom at a readable zoom (the user zooms out for more). The rows shown keep every
  // node beside it in view, undone branches included: centred on the newest step alone,
  // siblings to its left were cut off at the frame's edge.
  function frame(newest) {
    var ids = nodes.getIds();
    if (!ids.length || network.getScale() >= 0.6) return;
    if (newest === undefined) newest = ids[ids.length - 1];
    var at = network.getPositions([newest])[newest];
    var scale = 0.9;
    var shownRows = (graph.clientHeight - 40) / scale; // canvas units above the newest step
    var extent = rowExtent(ids, at.y - shownRows / 2, shownRows / 2);
    var x = at.x;
    if (extent.right > extent.left) {
      var margin = 24;
      scale = Math.min(scale, graph.clientWidth / (extent.right - extent.left + 2 * margin));
      x = (extent.left + extent.right) / 2;
    }
    var below = graph.clientHeight / 2 - 60;
    network.moveTo({ position: { x: x, y: at.y }, scale: scale, offset: { x: 0, y: below } });
  }

  // The newest of the steps an unfold brought in: where the fold was, so the view stays
  // where the person clicked and shows the steps just before it.
  function unfolded(before) {
    var ids = nodes.getIds();
    for (var i = ids.length - 1; i >= 0; i--) {
      if (ids[i] !== COLLAPSED && !before[ids[i]]) return ids[i];
    }
    return undefined;
  }

  function onClick(params) {
    var id = params.nodes.length ? params.nodes[0] : null;
    if (id === null && params.edges.length) return; // An edge: keep the selection.
    if (id === COLLAPSED) {
      unfolding = {};
      nodes.getIds().forEach(function (shown) { unfolding[shown] = true; });
    }
    var token = String(Date.now()) + ":" + Math.random().toString(36).slice(2);
    send("streamlit:setComponentValue", { value: { step: id, click: token }, dataType: "json" });
  }

  function draw(text) {
    if (text === drawn) return;
    drawn = text;
    var data = JSON.parse(text);
    drawLegend(data.legend);
    nodes = new vis.DataSet(data.nodes.map(visNode));
    edges = new vis.DataSet(data.edges);
    if (network === null) {
      network = new vis.Network(graph, { nodes: nodes, edges: edges }, data.options);
      network.on("click", onClick);
    } else {
      network.setOptions(data.options);
      network.setData({ nodes: nodes, edges: edges });
      // A tooltip shown over a node that is gone (the fold just clicked) would stay up.
      document.querySelectorAll("div.vis-tooltip").forEach(function (tip) {
        tip.style.visibility = "hidden";
      });
    }
    var focus = unfolding === null ? undefined : unfolded(unfolding);
    if (focus !== undefined) unfolding = null;
    frame(focus);
    // Read by the browser tests (and handy in the console).
    window.stepwiseDag = { nodes: nodes, edges: edges, network: network };
  }

  function select(id) {
    if (id !== null && id !== undefined && nodes.get(id) !== null) {
      network.selectNodes([id]);
    } else {
      network.unselectAll();
    }
  }

  function graphText(args) {
    if (typeof args.graph === "string") return args.graph;
    return JSON.stringify({
      nodes: args.nodes, edges: args.edges, options: args.options, legend: args.legend
    });
  }

  function render(args) {
    graph.style.height = String(args.height || 420) + "px";
    var text = graphText(args);
    if (typeof vis === "undefined") {
      document.getElementById("missing").style.display = "block";
      drawLegend(JSON.parse(text).legend);
    } else {
      draw(text);
      select(args.selected);
    }
    setHeight();
  }

  window.addEventListener("message", function (event) {
    if (event.source !== window.parent) return; // Only the Streamlit page talks to us.
    var data = event.data;
    if (data && data.type === "streamlit:render" && data.args) render(data.args);
  });
  send("streamlit:componentReady", { apiVersion: 1 });
})();
