# Posts → SBERT embeddings, each distinct text encoded once per dataset.


rule embed:
    input:
        posts=f"{RESULTS}/{{dataset}}/posts.parquet",
        code=code("embed.py"),
    output:
        f"{RESULTS}/{{dataset}}/sbert.npy",
    params:
        model=config["embedding_model"],
    threads: config["threads"]
    log:
        f"{RESULTS}/logs/{{dataset}}/embed.log",
    shell:
        "tempoformer embed --posts {input.posts} --model {params.model} --threads {threads}"
        " --output {output} 2> {log}"
