-- CreateTable
CREATE TABLE "DeploymentAdapter" (
    "id" TEXT NOT NULL,
    "projectId" TEXT NOT NULL,
    "deploymentId" TEXT NOT NULL,
    "adapterModelId" TEXT NOT NULL,
    "revisionId" TEXT NOT NULL,
    "etag" TEXT NOT NULL,
    "createdAt" BIGINT NOT NULL,
    "updatedAt" BIGINT NOT NULL,

    CONSTRAINT "DeploymentAdapter_pkey" PRIMARY KEY ("id")
);

-- CreateIndex
CREATE UNIQUE INDEX "DeploymentAdapter_deploymentId_adapterModelId_key" ON "DeploymentAdapter"("deploymentId", "adapterModelId");
