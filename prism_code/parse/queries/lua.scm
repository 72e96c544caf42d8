; Lua: definitions, calls and imports (read by prism_code/parse/tagged.py).

(function_declaration name: (identifier) @name body: (_)? @body) @definition.function
; `function M.f()`, `function M.sub.f()`: f owned by the table M (M.sub).
(function_declaration
  name: (dot_index_expression table: (_) @qualifier field: (identifier) @name) body: (_)? @body) @definition.function
; `function M:f()`: a method of M.
(function_declaration
  name: (method_index_expression table: (_) @qualifier method: (identifier) @name) body: (_)? @body) @definition.method

; `M.f = function() end`, `local f = function() end`, `f = function() end`
(assignment_statement
  (variable_list . name: (dot_index_expression table: (_) @qualifier field: (identifier) @name))
  (expression_list . value: (function_definition body: (_)? @body))) @definition.function
(assignment_statement
  (variable_list . name: (identifier) @name)
  (expression_list . value: (function_definition body: (_)? @body))) @definition.function

; `layouts.horizontal = make_layout("horizontal", opts, function(self) ... end)`: a function built
; by a call is named by what it is assigned to.
(assignment_statement
  (variable_list . name: (dot_index_expression table: (_) @qualifier field: (identifier) @name))
  (expression_list . value: (function_call arguments: (arguments (function_definition))))) @definition.function
(assignment_statement
  (variable_list . name: (identifier) @name)
  (expression_list . value: (function_call arguments: (arguments (function_definition))))) @definition.function

; `local actions = { select = function() end, ... }`: a table of functions is a class-kind unit.
; (`local x = ...` is a variable_declaration around the assignment: a doc wrapper, tagged_languages.py.)
; (Whether a field holds a function is a check in code: as a pattern it is slow on nested tables.)
((assignment_statement
   (variable_list . name: [(identifier) (dot_index_expression)] @name)
   (expression_list . value: (table_constructor) @body)) @definition.class
  (#set! definition.check "lua_function_table")
  (#set! name.split "."))
(field name: (identifier) @name value: (function_definition body: (_)? @body)) @definition.function

(function_call name: (_) @callee)

((function_call name: (identifier) @_require
  arguments: (arguments . (string content: (string_content) @import.module))) @import
  (#eq? @_require "require"))
