article_project()
