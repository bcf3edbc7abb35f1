std = "lua54"
files["tests/spec"] = {std = "+busted"}
