module conform.example/conformkit

go 1.19
