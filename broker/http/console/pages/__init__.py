"""One module per console page: `routes(console)` gives its routes, each made with `Console.page`."""
