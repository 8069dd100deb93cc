" The tool trace (agent-lsp://trace): a line per tool call start and end, compaction and
" new conversation. A failed call stands out (AgentLspToolFailed, set by the plugin).
if exists('b:current_syntax')
  finish
endif

syntax match agentLspTraceTime /^\d\d:\d\d:\d\d/
syntax match agentLspTraceDone /^\d\d:\d\d:\d\d ✓ .*$/ contains=agentLspTraceTime
syntax match agentLspTraceWaiting /^\d\d:\d\d:\d\d ⏸ .*$/ contains=agentLspTraceTime
syntax match agentLspTraceCompaction /^\d\d:\d\d:\d\d ⇣ .*$/ contains=agentLspTraceTime
syntax match agentLspTraceFailed /^\d\d:\d\d:\d\d ✗ .*$/
syntax match agentLspTraceNew /^-- new conversation --$/

highlight default link agentLspTraceTime Comment
highlight default link agentLspTraceDone Normal
highlight default link agentLspTraceWaiting WarningMsg
highlight default link agentLspTraceCompaction Comment
highlight default link agentLspTraceFailed AgentLspToolFailed
highlight default link agentLspTraceNew Comment
highlight default link AgentLspToolFailed ErrorMsg

let b:current_syntax = 'agentlsptrace'
