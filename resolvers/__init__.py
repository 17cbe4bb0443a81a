"""The service layer: what each GraphQL field does with the stored world.

Plain async functions over the records, with validation and limits, returning data and user
errors; the name is historical: they know nothing of GraphQL (graph/ calls them).
"""
