#!/usr/bin/env node
// JSON style PreToolUse hook in Node: pipes into a shell are denied, writes outside the project
// ($CLAUDE_PROJECT_DIR) need a person.
let input = "";
process.stdin.on("data", (chunk) => (input += chunk));
process.stdin.on("end", () => {
  const data = JSON.parse(input);
  const toolInput = data.tool_input || {};
  const project = process.env.CLAUDE_PROJECT_DIR;
  let output = null;
  if (data.tool_name === "Bash" && /curl[^|]*\|\s*(ba)?sh/.test(toolInput.command || "")) {
    output = { permissionDecision: "deny", permissionDecisionReason: "Piping curl into a shell is not allowed" };
  } else if (data.tool_name === "Write" && !toolInput.file_path.startsWith(project + "/")) {
    output = { permissionDecision: "ask", permissionDecisionReason: `Write outside ${project}` };
  }
  if (output) {
    console.log(JSON.stringify({ hookSpecificOutput: { hookEventName: "PreToolUse", ...output } }));
  }
  process.exit(0);
});
