module conform.example/assembler

go 1.19

require conform.example/conformkit v0.0.0

// The adapter kit lives beside the examples (examples/kits/go); nothing is downloaded.
replace conform.example/conformkit => ../kits/go
