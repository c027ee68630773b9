module conform.example/assembler

go 1.19
