# Adopt an existing deployment by namespace; the first plan then shows what
# the configuration would change.
tofu import jupyter_home_storage.homes jhub
