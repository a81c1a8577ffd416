"""The app's pages, one module per page, each drawing its page with `render()`."""
