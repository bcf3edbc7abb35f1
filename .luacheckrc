std = "lua54"
files["tests/spec"] = {std = "+busted"}

files["examples/*_spec.lua"] = {std = "+busted"}
