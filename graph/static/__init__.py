"""Files the service serves to browsers: the GraphiQL page and its pinned assets."""
