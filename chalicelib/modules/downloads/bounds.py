"""The campaigns' request bounds, in a module of their own so that the routes declaring them
(the API's ``registry-module-campaigns``, the web UI's campaigns page) read them without
importing ``campaign`` and the modules' services behind it at start (a cold start of the web
function pays for those only with the first page that uses them).
"""

# The longest ``page[after]`` cursor accepted (three keys of at most a few hundred bytes).
MAX_CURSOR = 1024
