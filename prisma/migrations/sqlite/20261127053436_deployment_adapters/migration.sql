-- CreateTable
CREATE TABLE "DeploymentAdapter" (
    "id" TEXT NOT NULL PRIMARY KEY,
    "projectId" TEXT NOT NULL,
    "deploymentId" TEXT NOT NULL,
    "adapterModelId" TEXT NOT NULL,
    "revisionId" TEXT NOT NULL,
    "etag" TEXT NOT NULL,
    "createdAt" BIGINT NOT NULL,
    "updatedAt" BIGINT NOT NULL
);

-- CreateIndex
CREATE UNIQUE INDEX "DeploymentAdapter_deploymentId_adapterModelId_key" ON "DeploymentAdapter"("deploymentId", "adapterModelId");
